//! One file per Nexmark query.

pub mod q0;
pub mod q1;
pub mod q10;
pub mod q11;
pub mod q14;
pub mod q2;
pub mod q21;
pub mod q22;
pub mod q3;
pub mod q5;
pub mod q7;
pub mod q8;
