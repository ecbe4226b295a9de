//! The ethtool ioctl (`SIOCETHTOOL`, `linux/ethtool.h`): the kernel's own interface to an
//! interface's driver facts, offload switches and link speed, without the `ethtool`
//! program. Each call fills one fixed-size command structure of the kernel's ABI.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, OwnedFd};

use super::cvt;

/// `ETHTOOL_GSET`: link settings (legacy, still answered through `get_link_ksettings`).
const GSET: u32 = 0x0000_0001;
/// `ETHTOOL_GDRVINFO`: driver name and version.
const GDRVINFO: u32 = 0x0000_0003;
/// `ETHTOOL_GFLAGS`: the flags word (`ETH_FLAG_LRO`).
pub const GFLAGS: u32 = 0x0000_0025;
/// `ETH_FLAG_LRO` in the flags word.
pub const FLAG_LRO: u32 = 1 << 15;

/// The offload switches with a get/set command pair taking one `ethtool_value`:
/// (name as `ethtool -k` prints it, get, set).
pub const SWITCHES: [(&str, u32, u32); 6] = [
    ("rx-checksumming", 0x14, 0x15),
    ("tx-checksumming", 0x16, 0x17),
    ("scatter-gather", 0x18, 0x19),
    ("tcp-segmentation-offload", 0x1e, 0x1f),
    ("generic-segmentation-offload", 0x23, 0x24),
    ("generic-receive-offload", 0x2b, 0x2c),
];

/// `struct ifreq` with `ifr_data` (40 bytes on 64-bit Linux).
#[repr(C)]
struct IfreqData {
    name: [u8; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 24 - size_of::<*mut libc::c_void>()],
}

/// `struct ethtool_value`.
#[repr(C)]
#[derive(Default)]
struct Value {
    cmd: u32,
    data: u32,
}

/// `struct ethtool_drvinfo` (196 bytes).
#[repr(C)]
struct DrvInfo {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    n_priv_flags: u32,
    n_stats: u32,
    testinfo_len: u32,
    eedump_len: u32,
    regdump_len: u32,
}

/// `struct ethtool_cmd` (44 bytes).
#[repr(C)]
#[derive(Default)]
struct LinkCmd {
    cmd: u32,
    supported: u32,
    advertising: u32,
    speed: u16,
    duplex: u8,
    port: u8,
    phy_address: u8,
    transceiver: u8,
    autoneg: u8,
    mdio_support: u8,
    maxtxpkt: u32,
    maxrxpkt: u32,
    speed_hi: u16,
    eth_tp_mdix: u8,
    eth_tp_mdix_ctrl: u8,
    lp_advertising: u32,
    reserved: [u32; 2],
}

/// A socket to send ethtool requests on, in this thread's network namespace.
pub fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the descriptor is owned from here on.
    let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// Sends the command structure `cmd` (of type `T`, whose first field is the `u32` command)
/// for interface `ifname`.
///
/// # Safety
/// `T` must be the kernel's structure for the command in its first field, `#[repr(C)]`, of
/// at least the size the kernel reads and writes for that command.
unsafe fn request<T>(sock: &impl AsRawFd, ifname: &str, cmd: &mut T) -> io::Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe { request_raw(sock, ifname, (cmd as *mut T).cast()) }
}

/// An interface name as `struct ifreq` holds it: 1 to 15 bytes, no NUL.
fn ifr_name(ifname: &str) -> io::Result<[u8; libc::IFNAMSIZ]> {
    let bytes = ifname.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{ifname}' is not an interface name"),
        ));
    }
    let mut name = [0; libc::IFNAMSIZ];
    name[..bytes.len()].copy_from_slice(bytes);
    Ok(name)
}

/// `SIOCETHTOOL` with `data` as `ifr_data`.
///
/// # Safety
/// `data` must point to the structure of the command in its first `u32`, live for the
/// call and as large as the kernel reads and writes for it.
unsafe fn request_raw(
    sock: &impl AsRawFd,
    ifname: &str,
    data: *mut libc::c_void,
) -> io::Result<()> {
    let mut ifr = IfreqData {
        name: ifr_name(ifname)?,
        data,
        _pad: [0; 24 - size_of::<*mut libc::c_void>()],
    };
    // SAFETY: `ifr` lives for the call; the caller vouches for what `data` points to.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut ifr) }).map(drop)
}

/// Reads (with a get command) or writes (with a set command and `data`) one value.
pub fn value(sock: &impl AsRawFd, ifname: &str, cmd: u32, data: u32) -> io::Result<u32> {
    let mut v = Value { cmd, data };
    // SAFETY: every command in SWITCHES and GFLAGS takes a `struct ethtool_value`.
    unsafe { request(sock, ifname, &mut v) }?;
    Ok(v.data)
}

/// What `ethtool -i` says: driver, version, firmware, bus address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverInfo {
    /// Driver name.
    pub driver: String,
    /// Driver version.
    pub version: String,
    /// Firmware version.
    pub firmware: String,
    /// Bus address (`0000:03:00.0` for a PCI device).
    pub bus_info: String,
}

fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The interface's driver name (`ethtool -i`: `driver`).
pub fn driver(sock: &impl AsRawFd, ifname: &str) -> io::Result<String> {
    driver_info(sock, ifname).map(|d| d.driver)
}

/// The interface's driver facts (`ethtool -i`).
pub fn driver_info(sock: &impl AsRawFd, ifname: &str) -> io::Result<DriverInfo> {
    let mut d = DrvInfo {
        cmd: GDRVINFO,
        driver: [0; 32],
        version: [0; 32],
        fw_version: [0; 32],
        bus_info: [0; 32],
        erom_version: [0; 32],
        reserved2: [0; 12],
        n_priv_flags: 0,
        n_stats: 0,
        testinfo_len: 0,
        eedump_len: 0,
        regdump_len: 0,
    };
    // SAFETY: GDRVINFO reads and writes a `struct ethtool_drvinfo`.
    unsafe { request(sock, ifname, &mut d) }?;
    Ok(DriverInfo {
        driver: c_string(&d.driver),
        version: c_string(&d.version),
        firmware: c_string(&d.fw_version),
        bus_info: c_string(&d.bus_info),
    })
}

/// The link speed in Mbit/s, when the driver knows it (`ethtool`: `Speed`).
pub fn speed_mbps(sock: &impl AsRawFd, ifname: &str) -> io::Result<Option<u32>> {
    link(sock, ifname).map(|l| l.0)
}

/// The link speed in Mbit/s and the duplex (`full`, `half`), each when the driver knows
/// it.
pub fn link(sock: &impl AsRawFd, ifname: &str) -> io::Result<(Option<u32>, Option<&'static str>)> {
    let mut c = LinkCmd {
        cmd: GSET,
        ..LinkCmd::default()
    };
    // SAFETY: GSET reads and writes a `struct ethtool_cmd`.
    unsafe { request(sock, ifname, &mut c) }?;
    let speed = u32::from(c.speed) | (u32::from(c.speed_hi) << 16);
    // SPEED_UNKNOWN is -1 (all ones); 0 means none either.
    let speed = (speed != 0 && speed != u32::MAX && speed != 0xffff).then_some(speed);
    let duplex = match c.duplex {
        0 => Some("half"),
        1 => Some("full"),
        _ => None,
    };
    Ok((speed, duplex))
}

/// `ETHTOOL_GCOALESCE`.
const GCOALESCE: u32 = 0x0000_000e;
/// `ETHTOOL_GRINGPARAM`.
const GRINGPARAM: u32 = 0x0000_0010;
/// `ETHTOOL_GCHANNELS`.
const GCHANNELS: u32 = 0x0000_003c;
/// `ETHTOOL_GSSET_INFO`.
const GSSET_INFO: u32 = 0x0000_0037;
/// `ETHTOOL_GSTRINGS`.
const GSTRINGS: u32 = 0x0000_001b;
/// `ETHTOOL_GFEATURES`.
const GFEATURES: u32 = 0x0000_003a;
/// `ETHTOOL_SFEATURES`.
const SFEATURES: u32 = 0x0000_003b;
/// `ETH_SS_FEATURES`: the string set of feature names.
const SS_FEATURES: u32 = 4;
/// `ETH_GSTRING_LEN`.
const GSTRING_LEN: usize = 32;
/// More features than any kernel has (about 70 today); bounds the buffers.
const MAX_FEATURES: usize = 256;

/// Reads a command structure that is `N` `u32` words, the first the command.
fn words<const N: usize>(sock: &impl AsRawFd, ifname: &str, cmd: u32) -> io::Result<[u32; N]> {
    let mut w = [0u32; N];
    w[0] = cmd;
    // SAFETY: callers pass the command whose structure is exactly N u32 words (checked
    // against linux/ethtool.h in the tests below).
    unsafe { request(sock, ifname, &mut w) }?;
    Ok(w)
}

/// `struct ethtool_coalesce` (23 words): rx-usecs, rx-frames, tx-usecs, tx-frames,
/// adaptive rx, adaptive tx.
pub fn coalesce(sock: &impl AsRawFd, ifname: &str) -> io::Result<[u32; 6]> {
    let w = words::<23>(sock, ifname, GCOALESCE)?;
    Ok([w[1], w[2], w[5], w[6], w[10], w[11]])
}

/// `struct ethtool_ringparam` (9 words): rx, rx max, tx, tx max.
pub fn rings(sock: &impl AsRawFd, ifname: &str) -> io::Result<[u32; 4]> {
    let w = words::<9>(sock, ifname, GRINGPARAM)?;
    Ok([w[5], w[1], w[8], w[4]])
}

/// `struct ethtool_channels` (9 words): rx, tx, other, combined, max combined.
pub fn channels(sock: &impl AsRawFd, ifname: &str) -> io::Result<[u32; 5]> {
    let w = words::<9>(sock, ifname, GCHANNELS)?;
    Ok([w[5], w[6], w[7], w[8], w[4]])
}

/// One feature: its kernel name, whether it is on, whether the driver lets it change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feature {
    /// Kernel name (`rx-checksum`).
    pub name: String,
    /// Active.
    pub on: bool,
    /// In the device's changeable set.
    pub changeable: bool,
}

/// The feature names, in bit order (`ETH_SS_FEATURES`).
fn feature_names(sock: &impl AsRawFd, ifname: &str) -> io::Result<Vec<String>> {
    // struct ethtool_sset_info: cmd, reserved, sset_mask (u64), data[1].
    let mut info = [0u32; 5];
    info[0] = GSSET_INFO;
    let mask = 1u64 << SS_FEATURES;
    info[2] = mask as u32;
    info[3] = (mask >> 32) as u32;
    // SAFETY: GSSET_INFO reads the header and writes one u32 per set bit of the mask
    // (one here) after it: 5 words.
    unsafe { request(sock, ifname, &mut info) }?;
    let count = (info[4] as usize).min(MAX_FEATURES);
    // struct ethtool_gstrings: cmd, string_set, len, then len * 32 bytes.
    let mut buf = vec![0u32; 3 + count * GSTRING_LEN / 4];
    buf[0] = GSTRINGS;
    buf[1] = SS_FEATURES;
    buf[2] = count as u32;
    // SAFETY: the kernel writes `len` (= count, the set's size it just gave) strings of
    // ETH_GSTRING_LEN bytes after the 3-word header; `buf` holds exactly that.
    unsafe { request_slice(sock, ifname, &mut buf) }?;
    let bytes: Vec<u8> = buf[3..].iter().flat_map(|w| w.to_ne_bytes()).collect();
    Ok(bytes.chunks(GSTRING_LEN).map(c_string).collect())
}

/// Every feature of the interface (`ethtool -k`, by kernel names).
pub fn features(sock: &impl AsRawFd, ifname: &str) -> io::Result<Vec<Feature>> {
    let names = feature_names(sock, ifname)?;
    let blocks = names.len().div_ceil(32);
    // struct ethtool_gfeatures: cmd, size, then per block: available, requested, active,
    // never_changed.
    let mut buf = vec![0u32; 2 + blocks * 4];
    buf[0] = GFEATURES;
    buf[1] = blocks as u32;
    // SAFETY: the kernel writes `size` blocks of 4 words after the 2-word header.
    unsafe { request_slice(sock, ifname, &mut buf) }?;
    Ok(names
        .into_iter()
        .enumerate()
        .filter(|(_, n)| !n.is_empty())
        .map(|(i, name)| {
            let b = &buf[2 + (i / 32) * 4..];
            let bit = 1u32 << (i % 32);
            Feature {
                name,
                on: b[2] & bit != 0,
                changeable: b[0] & bit != 0,
            }
        })
        .collect())
}

/// Asks for feature `name` on or off (`ethtool -K`); the caller reads back what became
/// active.
pub fn set_feature(sock: &impl AsRawFd, ifname: &str, name: &str, on: bool) -> io::Result<()> {
    let names = feature_names(sock, ifname)?;
    let Some(i) = names.iter().position(|n| n == name) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{ifname} has no feature named '{name}'"),
        ));
    };
    let blocks = names.len().div_ceil(32);
    // struct ethtool_sfeatures: cmd, size, then per block: valid, requested.
    let mut buf = vec![0u32; 2 + blocks * 2];
    buf[0] = SFEATURES;
    buf[1] = blocks as u32;
    let bit = 1u32 << (i % 32);
    buf[2 + (i / 32) * 2] = bit;
    if on {
        buf[3 + (i / 32) * 2] = bit;
    }
    // SAFETY: the kernel reads `size` blocks of 2 words after the 2-word header.
    unsafe { request_slice(sock, ifname, &mut buf) }
}

/// [`request`] for a variable-length structure of `u32` words.
///
/// # Safety
/// `buf` must hold the structure of the command in `buf[0]`, header and the whole
/// variable part the kernel reads or writes for the sizes given in the header.
unsafe fn request_slice(sock: &impl AsRawFd, ifname: &str, buf: &mut [u32]) -> io::Result<()> {
    // SAFETY: forwarded from the caller; `buf` lives for the call.
    unsafe { request_raw(sock, ifname, buf.as_mut_ptr().cast()) }
}

/// `struct ifreq` with `ifr_mtu`.
#[repr(C)]
struct IfreqMtu {
    name: [u8; libc::IFNAMSIZ],
    mtu: libc::c_int,
    _pad: [u8; 20],
}

fn ifreq_mtu(ifname: &str, mtu: u32) -> io::Result<IfreqMtu> {
    Ok(IfreqMtu {
        name: ifr_name(ifname)?,
        mtu: libc::c_int::try_from(mtu).unwrap_or(libc::c_int::MAX),
        _pad: [0; 20],
    })
}

/// The interface's MTU (`SIOCGIFMTU`).
pub fn mtu(sock: &impl AsRawFd, ifname: &str) -> io::Result<u32> {
    let mut r = ifreq_mtu(ifname, 0)?;
    // SAFETY: SIOCGIFMTU writes `ifr_mtu` of the `struct ifreq` we own.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFMTU, &mut r) })?;
    Ok(u32::try_from(r.mtu).unwrap_or(0))
}

/// Sets the interface's MTU (`SIOCSIFMTU`; needs CAP_NET_ADMIN).
pub fn set_mtu(sock: &impl AsRawFd, ifname: &str, mtu: u32) -> io::Result<()> {
    let mut r = ifreq_mtu(ifname, mtu)?;
    // SAFETY: SIOCSIFMTU reads the `struct ifreq` we own.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFMTU, &mut r) }).map(drop)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn structures_have_the_kernels_sizes() {
        assert_eq!(size_of::<IfreqData>(), 40);
        assert_eq!(size_of::<Value>(), 8);
        assert_eq!(size_of::<DrvInfo>(), 196);
        assert_eq!(size_of::<LinkCmd>(), 44);
        assert_eq!(size_of::<IfreqMtu>(), 40);
    }

    #[test]
    fn loopback_answers_and_bad_names_are_refused() {
        let s = control_socket().unwrap();
        // Every Linux has lo, with checksum offload on.
        assert_eq!(value(&s, "lo", SWITCHES[1].1, 0).unwrap(), 1);
        let e = value(&s, "no-such-if0", SWITCHES[0].1, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENODEV), "{e}");
        assert!(value(&s, "", SWITCHES[0].1, 0).is_err());
        assert!(value(&s, "a-name-far-too-long", SWITCHES[0].1, 0).is_err());
    }

    #[test]
    fn loopback_features_and_mtu_read_back() {
        let s = control_socket().unwrap();
        let f = features(&s, "lo").unwrap();
        // Loopback has its checksum feature on and fixed, under the kernel's name.
        let csum = f
            .iter()
            .find(|x| x.name == "tx-checksum-ip-generic")
            .unwrap();
        assert!(csum.on, "{f:?}");
        assert!(f.len() > 30, "{}", f.len());
        assert!(mtu(&s, "lo").unwrap() >= 1500);
        let e = set_feature(&s, "lo", "warp-drive", true).unwrap_err();
        assert!(e.to_string().contains("warp-drive"), "{e}");
    }
}
