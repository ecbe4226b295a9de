//! The wirebench data plane: I/O only. The pure parts it drives (pacing schedules, per-stream
//! accounting, histograms, test specs, the results model) are in the `model` crate.
//!
//! - [`clock`]: the real clock (the `Clock` trait and a virtual clock are `model::clock`);
//! - [`env`]: the machine a result was measured on, and the time;
//!
//! Each data-plane part runs on a dedicated OS thread (no async on the hot path):
//! - [`udp`]: paced UDP sender (`sendmmsg` or GSO) and accounting receiver with kernel timestamps;
//! - [`frameio`]: whole Ethernet frames over `AF_PACKET` (batched send/receive);
//! - [`tcp`]: block writer and byte-counting reader with `TCP_INFO`;
//! - [`probe`]: path probes through an echo socket (a path MTU search's, a packet train);
//! - [`live`]: lock-free counters the data threads publish and the controller samples;
//! - [`bridge`]: a Linux bridge's learning limit over rtnetlink;
//! - [`nic`]: an interface's driver, speed and offloads through the ethtool ioctl;
//! - [`sys`]: the only module with `unsafe` (batch syscalls, cmsg, socket options).
//!
//! The engine does not know about the control protocol, clients or servers: callers hand
//! it connected sockets and a stop token (`model::stop::Stop`).
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

pub mod bridge;
pub mod clock;
pub mod env;
pub mod files;
pub mod frameio;
pub mod iperf3_udp;
pub mod live;
pub mod multi;
pub mod nic;
pub mod pace;
pub mod probe;
pub mod raw;
pub mod sys;
pub mod tcp;
pub mod udp;
