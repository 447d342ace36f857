//! One file per Nexmark query (and what several share: `daily` for q15-q17, `winning_bids`
//! for q4, q6 and q9, `updates` for the queries with an updating result).

pub mod daily;
pub mod final_table;
pub mod q0;
pub mod q1;
pub mod q10;
pub mod q11;
pub mod q12;
pub mod q13;
pub mod q14;
pub mod q15;
pub mod q16;
pub mod q17;
pub mod q18;
pub mod q19;
pub mod q2;
pub mod q20;
pub mod q21;
pub mod q22;
pub mod q3;
pub mod q4;
pub mod q5;
pub mod q6;
pub mod q7;
pub mod q8;
pub mod q9;
pub mod updates;
pub mod winning_bids;
