//! Integration tests: they run the real `wirebench` binary as server and client on
//! loopback. One test binary (`autotests = false`), one module per area.

mod util;

mod agents;
mod bad_input;
mod cli;
mod client;
mod frer;
mod hostile;
mod iperf3;
mod lab;
mod mesh;
mod methods;
mod metrics;
mod nic;
mod raw;
mod run;
mod server;
