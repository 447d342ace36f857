//! One file per Nexmark query.

pub mod q0;
pub mod q1;
pub mod q2;
pub mod q3;
