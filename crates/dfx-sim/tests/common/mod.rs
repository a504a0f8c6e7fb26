//! Shared helpers of the simulator's integration tests and examples.

pub mod calibration;
pub mod client;
pub mod orders;
