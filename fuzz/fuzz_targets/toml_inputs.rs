//! Any text as each TOML file a user hands wirebench: a plan (through the program's own
//! command-line definitions), a multi-stream profile, a lab topology, an impairment spec
//! and a relay configuration. Each parses or says why; none panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match pick % 5 {
        0 => {
            let _ = campaign::plan::Plan::parse(text, &command_line::requests::Parser);
        }
        1 => {
            let _ = method::streams::Profile::parse(text);
        }
        2 => {
            let _ = lab::topology::Topology::from_toml(text);
        }
        3 => {
            let _ = lab::impair::spec::ImpairSpec::parse(text);
        }
        _ => {
            if let Ok(c) = lab::relay::config::RelayConfig::from_toml(text) {
                let _ = c.check();
            }
        }
    }
});
