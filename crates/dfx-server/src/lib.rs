//! The server under test as a supervised child process (SERVER.md): command building,
//! process-group supervision, readiness, logs, teardown and attach mode. Implements
//! [`dfx_core::server::ServerLauncher`].
