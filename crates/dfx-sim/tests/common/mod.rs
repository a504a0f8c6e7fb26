//! Shared helpers of the simulator's integration tests and examples.

pub(crate) mod calibration;
pub(crate) mod client;
pub(crate) mod orders;
