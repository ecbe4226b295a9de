//! The ends of a profile's raw streams for [`StreamsRun`]: servers' ports that send
//! ([`RemoteSource`]) or count ([`RemoteDest`]) streams, where each stream goes, and the
//! frames each stream sends, built from its ports' addresses.
//!
//! It opens the servers' ports and reads this host's interfaces; it does not run the
//! streams (`streams.rs` does).

use control::rawport::{RawAgent, RawOpenRequest, RawStream};
use engine::frameio::Endpoint;
use engine::multi::{Patch, StreamTx};
use method::streams::{Profile, StreamProto, StreamSpec};
use wire::frame::FrameSpec;
use wire::linerate::LineRate;
use wire::testhdr::TestHeaderRepr;

use crate::frames;
use crate::trials::agents::{agent_addresses, backend_name};
use crate::trials::streams_run::{stream_request, StreamsRun};
use crate::{usage, Error};

/// A stream's frames: per distinct size, the size, the frame and where to patch it.
pub(crate) type Templates = Vec<(u64, Vec<u8>, Patch)>;

/// The distinct sizes of stream `s`, smallest first.
fn sizes(s: &StreamSpec) -> Vec<u64> {
    let mut sizes = s.pattern.clone();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Stream `s`'s frames of each of its sizes, built from `spec` with test header `hdr`.
pub(crate) fn l4_templates(
    s: &StreamSpec,
    spec: &FrameSpec,
    hdr: &TestHeaderRepr,
) -> Result<Templates, Error> {
    let in_stream = |e: String| usage(format!("stream '{}': {e}", s.name));
    let mut built = Vec::new();
    for len in sizes(s) {
        let mut buf = vec![0u8; len as usize];
        let n = spec.build(len as usize, hdr, &mut buf).map_err(|e| {
            in_stream(format!(
                "{len}-byte frame: {e} (at least {} bytes)",
                spec.min_frame_len()
            ))
        })?;
        buf.truncate(n);
        let layout = spec
            .layout(len as usize)
            .map_err(|e| in_stream(e.to_string()))?;
        built.push((len, buf, Patch::L4(layout)));
    }
    Ok(built)
}

/// Stream `s`'s raw EtherType frames from MAC `src` to MAC `dst`, test header `hdr` right
/// after the EtherType (and the VLAN tag, if it has one).
pub(crate) fn l2_templates(
    s: &StreamSpec,
    ethertype: u16,
    (src, dst): ([u8; 6], [u8; 6]),
    hdr: &TestHeaderRepr,
) -> Result<Templates, Error> {
    let vlan = s.vlan.map(|vid| wire::vlan::VlanRepr {
        pcp: s.pcp,
        dei: false,
        vid,
        inner_ethertype: wire::EtherType::from(ethertype),
    });
    sizes(s)
        .into_iter()
        .map(|len| {
            let (buf, patch) = frames::l2_frame((src, dst), ethertype, vlan, len, hdr)
                .map_err(|e| usage(format!("stream '{}': {e}", s.name)))?;
            Ok((len, buf, patch))
        })
        .collect()
}

/// The frame templates of one raw stream between ports of this host, one per distinct
/// size, with where to patch them.
pub(crate) fn templates(
    s: &StreamSpec,
    (tx, rx): (&Endpoint, &Endpoint),
    hdr: &TestHeaderRepr,
    run: &StreamsRun,
    line: LineRate,
) -> Result<Templates, Error> {
    if let StreamProto::EtherType(t) = s.protocol {
        let runner = &mut lab::SystemRunner;
        let src = lab::probe::addresses(runner, tx)?.mac;
        let dst = match s.dst_mac {
            Some(m) => m,
            None => lab::probe::addresses(runner, rx)?.mac,
        };
        return l2_templates(s, t, (src, dst), hdr);
    }
    let request = stream_request(s, run, line);
    let spec = frames::spec(&request, tx, Some(rx))
        .map_err(|e| usage(format!("stream '{}': {e}", s.name)))?;
    l4_templates(s, &spec, hdr)
}

/// A source on a server's port: its session, opened for the streams that start there.
pub(crate) struct RemoteSource {
    /// `HOST/IFACE` as the profile names it.
    pub(crate) source: String,
    pub(crate) agent: RawAgent,
}

impl RemoteSource {
    /// Opens source `source` (`HOST/IFACE`) for the streams of `profile` that start
    /// there, toward their destinations (ports of this host), the next hop resolved by
    /// the server for the first one's address.
    ///
    /// # Errors
    /// The server refuses, or the streams need what a remote source does not do yet.
    pub(crate) fn open(
        run: &StreamsRun,
        profile: &Profile,
        source: &str,
        (host, port, iface): (&str, Option<u16>, &str),
        far_dests: &[RemoteDest],
    ) -> Result<Self, Error> {
        let line = profile.line_rate;
        let mine: Vec<&StreamSpec> = profile
            .streams
            .iter()
            .filter(|s| s.source == source)
            .collect();
        refuse_other_ethertypes(&mine)?;
        let mut dst_ips = Vec::new();
        // Raw EtherType streams go to their destination's MAC: nothing to resolve.
        for s in mine
            .iter()
            .filter(|s| !matches!(s.protocol, StreamProto::EtherType(_)))
        {
            let (name, rxa, _) = destination(s, run, far_dests)?;
            let ip = frames::dst_ip(&stream_request(s, run, line), Some((&name, &rxa)))?;
            if s.dst_mac.is_none() && !dst_ips.contains(&ip) {
                dst_ips.push(ip);
            }
        }
        if dst_ips.len() > 1 {
            return Err(usage(format!(
                "the streams from {source} go to {} addresses: the server resolves one next hop, so give the others dst_mac",
                dst_ips.len()
            )));
        }
        let req = RawOpenRequest {
            send: Some(backend_name(run.backend)),
            resolve: dst_ips.first().copied(),
            ..RawOpenRequest::default()
        };
        let agent = open_far(run, &mine, (host, port, iface), req)?;
        refuse_past_longest((&agent.label, agent.longest_test()), &mine)?;
        Ok(Self {
            source: source.to_owned(),
            agent,
        })
    }

    /// Stream `s`'s frames from this source, with test header `hdr`.
    pub(crate) fn templates(
        &self,
        s: &StreamSpec,
        hdr: &TestHeaderRepr,
        (run, line): (&StreamsRun, LineRate),
        far_dests: &[RemoteDest],
    ) -> Result<Templates, Error> {
        let (name, rxa, _) = destination(s, run, far_dests)?;
        if let StreamProto::EtherType(t) = s.protocol {
            let dst = s.dst_mac.unwrap_or(rxa.mac);
            return l2_templates(s, t, (self.agent.facts.mac, dst), hdr);
        }
        let request = stream_request(s, run, line);
        let dst_ip = frames::dst_ip(&request, Some((&name, &rxa)))?;
        let dst_mac = s.dst_mac.or(self.agent.facts.next_hop_mac).ok_or_else(|| {
            usage(format!(
                "stream '{}': the next hop's MAC from {} is not known: give dst_mac",
                s.name, self.agent.label
            ))
        })?;
        let spec = frames::headers(
            &request,
            (&self.agent.label, &agent_addresses(&self.agent)),
            dst_ip,
            dst_mac,
        )?;
        l4_templates(s, &spec, hdr)
    }
}

/// Opens a server's port as `req` asks, for the frames of `streams` (their largest, and a
/// VLAN tag if one has it, within the port's MTU).
fn open_far(
    run: &StreamsRun,
    streams: &[&StreamSpec],
    at: (&str, Option<u16>, &str),
    req: RawOpenRequest,
) -> Result<RawAgent, Error> {
    let max_len = streams
        .iter()
        .flat_map(|s| s.pattern.iter().copied())
        .max()
        .unwrap_or(64);
    let agent = run
        .agents
        .open(at, RawOpenRequest { max_len, ..req }, &run.stop)?;
    let vlan = streams.iter().any(|s| s.vlan.is_some());
    frames::fits(agent.facts.mtu, (&agent.label, &agent.iface), max_len, vlan)?;
    Ok(agent)
}

/// Refuses streams that run past the longest test of the server (`label`, `longest`
/// seconds) now, rather than after the streams here have run.
pub(crate) fn refuse_past_longest(
    (label, longest): (&str, f64),
    streams: &[&StreamSpec],
) -> Result<(), Error> {
    let last = streams.iter().map(|s| s.stop).fold(0.0, f64::max);
    if last > longest {
        return Err(usage(format!(
            "{label}: its streams run until {last} s; this server's longest test is {longest} s"
        )));
    }
    Ok(())
}

/// Refuses, before anything is sent, raw EtherType streams of `streams` whose EtherType
/// is not the test one (0x88B5): a server's port builds and counts no other.
pub(crate) fn refuse_other_ethertypes(streams: &[&StreamSpec]) -> Result<(), Error> {
    let test = u16::from(wire::EtherType::EXPERIMENTAL);
    match streams.iter().find_map(|s| match s.protocol {
        StreamProto::EtherType(t) if t != test => Some((s, t)),
        _ => None,
    }) {
        Some((s, t)) => Err(usage(format!(
            "stream '{}': a server's port sends and counts raw frames of the test EtherType \
             0x88B5 only, not 0x{t:04X}",
            s.name
        ))),
        None => Ok(()),
    }
}

/// A destination on a server's port: its session, counting the streams that end there
/// and, when it listens, the other streams' frames that arrive there too (strays).
pub(crate) struct RemoteDest {
    /// `HOST/IFACE` as the profile names it.
    pub(crate) dest: String,
    pub(crate) agent: RawAgent,
    /// It counts strays: it drains as a port here does, not only until its own streams
    /// are in.
    pub(crate) listens: bool,
}

impl RemoteDest {
    /// Opens destination `dest` (`HOST/IFACE`) for the streams of `profile` that end there
    /// (none, for a port that only listens).
    ///
    /// # Errors
    /// The server refuses.
    pub(crate) fn open(
        run: &StreamsRun,
        profile: &Profile,
        dest: &str,
        (host, port, iface): (&str, Option<u16>, &str),
    ) -> Result<Self, Error> {
        let mine: Vec<&StreamSpec> = profile
            .streams
            .iter()
            .filter(|s| s.destination == dest)
            .collect();
        refuse_other_ethertypes(&mine)?;
        let listens = run.listen.iter().any(|p| p == dest);
        let req = RawOpenRequest {
            receive: Some(backend_name(run.backend)),
            ..RawOpenRequest::default()
        };
        let agent = open_far(run, &mine, (host, port, iface), req)?;
        // A port that listens counts until every stream of the profile is done.
        let counted: Vec<&StreamSpec> = if listens {
            profile.streams.iter().collect()
        } else {
            mine
        };
        refuse_past_longest((&agent.label, agent.longest_test()), &counted)?;
        Ok(Self {
            dest: dest.to_owned(),
            agent,
            listens,
        })
    }
}

/// Where stream `s` goes: its port's name, addresses and host's boot id (this host's for
/// a port here).
pub(crate) fn destination(
    s: &StreamSpec,
    run: &StreamsRun,
    far_dests: &[RemoteDest],
) -> Result<(String, lab::probe::Addresses, Option<String>), Error> {
    if let Some(d) = far_dests.iter().find(|d| d.dest == s.destination) {
        let a = &d.agent;
        return Ok((a.label.clone(), agent_addresses(a), a.facts.host_id.clone()));
    }
    let rx = frames::port(&s.destination, &run.lab)?;
    let rxa = lab::probe::addresses(&mut lab::SystemRunner, &rx)?;
    Ok((rx.to_string(), rxa, engine::env::boot_id()))
}

/// Stream `s`'s frames from a port here to a server's port.
pub(crate) fn templates_to_far(
    s: &StreamSpec,
    hdr: &TestHeaderRepr,
    (run, line): (&StreamsRun, LineRate),
    far_dests: &[RemoteDest],
) -> Result<Templates, Error> {
    let (name, rxa, _) = destination(s, run, far_dests)?;
    let runner = &mut lab::SystemRunner;
    let tx = frames::port(&s.source, &run.lab)?;
    let txa = lab::probe::addresses(runner, &tx)?;
    if let StreamProto::EtherType(t) = s.protocol {
        return l2_templates(s, t, (txa.mac, s.dst_mac.unwrap_or(rxa.mac)), hdr);
    }
    let request = stream_request(s, run, line);
    let dst_ip = frames::dst_ip(&request, Some((&name, &rxa)))?;
    let dst_mac = match s.dst_mac {
        Some(m) => m,
        None => lab::probe::next_hop_mac(runner, &tx, dst_ip)?,
    };
    let spec = frames::headers(&request, (&tx.to_string(), &txa), dst_ip, dst_mac)?;
    l4_templates(s, &spec, hdr)
}

/// Streams as a server's port takes them: an example frame, the sizes, pattern, rate,
/// start and stop.
pub(crate) fn wire_streams(streams: &[StreamTx]) -> Vec<RawStream> {
    streams
        .iter()
        .map(|s| RawStream {
            stream_id: s.stream_id,
            // The smallest frame: the port takes its headers.
            frame: s
                .templates
                .iter()
                .map(|(b, _)| b)
                .min_by_key(|b| b.len())
                .map(|b| control::auth::to_hex(b))
                .unwrap_or_default(),
            sizes: s
                .templates
                .iter()
                .map(|(b, _)| (b.len() + 4) as u64)
                .collect(),
            pattern: s.pattern.iter().map(|i| *i as u16).collect(),
            pps: s.pps,
            start_s: s.start.as_secs_f64(),
            stop_s: s.stop.as_secs_f64(),
        })
        .collect()
}
