//! A Linux bridge's learning limit over rtnetlink: `IFLA_BR_FDB_MAX_LEARNED` (Linux 6.7),
//! the most FDB entries the bridge learns by itself, which this host's iproute2 (6.1)
//! cannot set;
//! and reading it back with `IFLA_BR_FDB_N_LEARNED`, how many it holds.
//!
//! The messages are built and read here (pure, tested); [`crate::sys::netlink_route`]
//! carries them. It does not flush or list the FDB (`ip`/`bridge` do that).

use std::io;

// rtnetlink(7), linux/netlink.h, linux/if_link.h.
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;
const IFLA_LINKINFO: u16 = 18;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const IFLA_BR_FDB_N_LEARNED: u16 = 48;
const IFLA_BR_FDB_MAX_LEARNED: u16 = 49;
const HEADER: usize = 16;
const IFINFOMSG: usize = 16;

/// A bridge's learned entries and its limit, as the kernel reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Learned {
    /// Dynamically learned FDB entries now.
    pub entries: u32,
    /// The limit (0: none).
    pub limit: u32,
}

/// Sets bridge `dev`'s learning limit (0: none) and reads it back.
///
/// # Errors
/// No such interface, no permission, or a kernel without the limit (before 6.7), which
/// either refuses the attribute or does not report it back.
pub fn set_learning_limit(dev: &str, limit: u32) -> io::Result<Learned> {
    let index = crate::sys::interface_index(dev)?;
    let answers = crate::sys::netlink_route(&set_limit_request(index, limit), &answered)?;
    acknowledged(&answers)?;
    let got = learned(dev)?;
    if got.limit != limit {
        return Err(io::Error::other(format!(
            "{dev}: the kernel kept a learning limit of {} after {limit} was set",
            got.limit
        )));
    }
    Ok(got)
}

/// Bridge `dev`'s learned entries and limit.
///
/// # Errors
/// No such interface, or a kernel that does not report them (before 6.7).
pub fn learned(dev: &str) -> io::Result<Learned> {
    let index = crate::sys::interface_index(dev)?;
    let answers = crate::sys::netlink_route(&get_link_request(index), &answered)?;
    acknowledged(&answers)?;
    read_learned(&answers).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{dev}: the kernel reports no bridge learning limit (it needs Linux 6.7 or later)"
            ),
        )
    })
}

fn push_attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(buf.len().next_multiple_of(4), 0);
}

/// A request: header (`kind`, `flags`) and an `ifinfomsg` for interface `index`, then
/// `attrs` (already encoded).
fn request(kind: u16, index: u32, attrs: &[u8]) -> Vec<u8> {
    let len = HEADER + IFINFOMSG + attrs.len();
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    m.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel assigns it
                                              // ifinfomsg: family AF_UNSPEC, pad, type, index, flags, change.
    m.extend_from_slice(&[0, 0, 0, 0]);
    m.extend_from_slice(&index.to_ne_bytes());
    m.extend_from_slice(&[0; 8]);
    m.extend_from_slice(attrs);
    m
}

/// `RTM_NEWLINK` for bridge `index`: linkinfo kind "bridge", data with the limit (what
/// `ip link set DEV type bridge fdb_max_learned N` sends).
fn set_limit_request(index: u32, limit: u32) -> Vec<u8> {
    let mut data = Vec::new();
    push_attr(&mut data, IFLA_BR_FDB_MAX_LEARNED, &limit.to_ne_bytes());
    let mut info = Vec::new();
    push_attr(&mut info, IFLA_INFO_KIND, b"bridge\0");
    push_attr(&mut info, IFLA_INFO_DATA | NLA_F_NESTED, &data);
    let mut attrs = Vec::new();
    push_attr(&mut attrs, IFLA_LINKINFO | NLA_F_NESTED, &info);
    request(RTM_NEWLINK, index, &attrs)
}

/// `RTM_GETLINK` for interface `index`.
fn get_link_request(index: u32) -> Vec<u8> {
    request(RTM_GETLINK, index, &[])
}

/// The messages of `d`: (type, payload after the header).
fn messages(d: &[u8]) -> Vec<(u16, &[u8])> {
    walk(d).0
}

/// The messages of `d`, and whether they fill it (a length that does not fit ends the
/// walk early).
fn walk(mut d: &[u8]) -> (Vec<(u16, &[u8])>, bool) {
    let mut out = Vec::new();
    while d.len() >= HEADER {
        let len = u32::from_ne_bytes([d[0], d[1], d[2], d[3]]) as usize;
        let kind = u16::from_ne_bytes([d[4], d[5]]);
        if len < HEADER || len > d.len() {
            return (out, false);
        }
        out.push((kind, &d[HEADER..len]));
        d = &d[len.next_multiple_of(4).min(d.len())..];
    }
    (out, d.is_empty())
}

/// Whether a datagram of answers holds the message that ends them (an error or
/// acknowledgement, or a DONE), or cannot be read on (so nothing more is waited for).
fn answered(d: &[u8]) -> bool {
    let (msgs, whole) = walk(d);
    !whole
        || msgs
            .iter()
            .any(|(kind, _)| *kind == NLMSG_ERROR || *kind == NLMSG_DONE)
}

/// The attributes of `d`: (type without flags, payload).
fn attrs(mut d: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    while d.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([d[0], d[1]]));
        let kind = u16::from_ne_bytes([d[2], d[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > d.len() {
            break;
        }
        out.push((kind, &d[4..len]));
        d = &d[len.next_multiple_of(4).min(d.len())..];
    }
    out
}

/// The kernel's error for the request, if it sent one (an `NLMSG_ERROR` whose error is
/// not 0; 0 is the acknowledgement).
fn acknowledged(answers: &[u8]) -> io::Result<()> {
    for (kind, body) in messages(answers) {
        if kind != NLMSG_ERROR {
            continue;
        }
        let Some(e) = body.get(..4) else { continue };
        let errno = i32::from_ne_bytes([e[0], e[1], e[2], e[3]]);
        if errno != 0 {
            return Err(io::Error::from_raw_os_error(-errno));
        }
    }
    Ok(())
}

/// The learned entries and limit in an `RTM_NEWLINK` answer's linkinfo data, if it has
/// both.
fn read_learned(answers: &[u8]) -> Option<Learned> {
    let u32_of = |p: &[u8]| Some(u32::from_ne_bytes(p.get(..4)?.try_into().ok()?));
    for (kind, body) in messages(answers) {
        if kind != RTM_NEWLINK {
            continue;
        }
        let link = body.get(IFINFOMSG..)?;
        let info = attrs(link).into_iter().find(|a| a.0 == IFLA_LINKINFO)?.1;
        let data = attrs(info).into_iter().find(|a| a.0 == IFLA_INFO_DATA)?.1;
        let data = attrs(data);
        let get = |k: u16| data.iter().find(|a| a.0 == k).and_then(|a| u32_of(a.1));
        return Some(Learned {
            entries: get(IFLA_BR_FDB_N_LEARNED)?,
            limit: get(IFLA_BR_FDB_MAX_LEARNED)?,
        });
    }
    None
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_limit_request_nests_the_limit_in_the_bridges_linkinfo() {
        let m = set_limit_request(7, 512);
        assert_eq!(m.len() % 4, 0);
        let msgs = messages(&m);
        assert_eq!(msgs.len(), 1);
        let (kind, body) = msgs[0];
        assert_eq!(kind, RTM_NEWLINK);
        assert_eq!(u16::from_ne_bytes([m[6], m[7]]), NLM_F_REQUEST | NLM_F_ACK);
        assert_eq!(i32::from_ne_bytes(body[4..8].try_into().unwrap()), 7);
        let top = attrs(&body[IFINFOMSG..]);
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].0, IFLA_LINKINFO);
        let info = attrs(top[0].1);
        assert_eq!(info[0], (IFLA_INFO_KIND, &b"bridge\0"[..]));
        assert_eq!(info[1].0, IFLA_INFO_DATA);
        let data = attrs(info[1].1);
        assert_eq!(
            data,
            vec![(IFLA_BR_FDB_MAX_LEARNED, &512u32.to_ne_bytes()[..])]
        );
    }

    /// An answer as the kernel sends it: the link, then the acknowledgement.
    fn answer(learned: Option<(u32, u32)>, errno: i32) -> Vec<u8> {
        let mut data = Vec::new();
        if let Some((n, max)) = learned {
            push_attr(&mut data, 5, &300u32.to_ne_bytes()); // another bridge attribute
            push_attr(&mut data, IFLA_BR_FDB_N_LEARNED, &n.to_ne_bytes());
            push_attr(&mut data, IFLA_BR_FDB_MAX_LEARNED, &max.to_ne_bytes());
        }
        let mut info = Vec::new();
        push_attr(&mut info, IFLA_INFO_KIND, b"bridge\0");
        push_attr(&mut info, IFLA_INFO_DATA | NLA_F_NESTED, &data);
        let mut attrs = Vec::new();
        push_attr(&mut attrs, 3, b"br0\0"); // IFLA_IFNAME
        push_attr(&mut attrs, IFLA_LINKINFO | NLA_F_NESTED, &info);
        let mut out = request(RTM_NEWLINK, 7, &attrs);
        let mut ack = Vec::new();
        ack.extend_from_slice(&36u32.to_ne_bytes());
        ack.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        ack.extend_from_slice(&[0; 10]);
        ack.extend_from_slice(&errno.to_ne_bytes());
        ack.extend_from_slice(&[0; 16]);
        out.extend_from_slice(&ack);
        out
    }

    #[test]
    fn the_answer_gives_the_learned_entries_and_the_limit() {
        let a = answer(Some((3, 512)), 0);
        assert!(acknowledged(&a).is_ok());
        assert_eq!(
            read_learned(&a),
            Some(Learned {
                entries: 3,
                limit: 512
            })
        );
    }

    #[test]
    fn a_kernel_without_the_limit_or_an_error_is_told() {
        assert_eq!(read_learned(&answer(None, 0)), None);
        let e = acknowledged(&answer(None, -libc::EPERM)).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM));
        // The acknowledgement ends the answers; the link alone does not; a datagram that
        // cannot be read on ends them too.
        let a = answer(Some((3, 512)), 0);
        let link_only = &a[..a.len() - 36];
        assert!(answered(&a) && !answered(link_only));
        assert!(answered(&a[..a.len() - 1]));
        // Truncated and garbage answers are read as far as they go, without panicking.
        for cut in 0..a.len() {
            let _ = read_learned(&a[..cut]);
            let _ = acknowledged(&a[..cut]);
        }
    }
}
