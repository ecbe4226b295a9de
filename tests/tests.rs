//! Integration tests: they run the real `wirebench` binary as server and client on
//! loopback and in labs. One test binary (`autotests = false`), one module per area, run
//! by the harness of `harness.rs`: each module lists its tests and what each needs from
//! the machine in its `cases()`; what cannot run here is reported skipped, with its reason.

mod harness;
mod util;

mod agents;
mod bad_input;
mod chain;
mod cli;
mod client;
mod docs;
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
mod switch;

fn main() -> std::process::ExitCode {
    harness::main(
        [
            agents::cases(),
            bad_input::cases(),
            chain::cases(),
            cli::cases(),
            client::cases(),
            docs::cases(),
            frer::cases(),
            hostile::cases(),
            iperf3::cases(),
            lab::cases(),
            mesh::cases(),
            methods::cases(),
            metrics::cases(),
            nic::cases(),
            raw::cases(),
            run::cases(),
            server::cases(),
            switch::cases(),
        ]
        .into_iter()
        .flatten()
        .collect(),
    )
}
