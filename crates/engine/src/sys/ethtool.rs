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
    let bytes = ifname.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{ifname}' is not an interface name"),
        ));
    }
    let mut ifr = IfreqData {
        name: [0; libc::IFNAMSIZ],
        data: (cmd as *mut T).cast(),
        _pad: [0; 24 - size_of::<*mut libc::c_void>()],
    };
    ifr.name[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: `ifr` and the structure it points to live for the call; the caller vouches
    // that the structure is the one the command reads and writes.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut ifr) }).map(drop)
}

/// Reads (with a get command) or writes (with a set command and `data`) one value.
pub fn value(sock: &impl AsRawFd, ifname: &str, cmd: u32, data: u32) -> io::Result<u32> {
    let mut v = Value { cmd, data };
    // SAFETY: every command in SWITCHES and GFLAGS takes a `struct ethtool_value`.
    unsafe { request(sock, ifname, &mut v) }?;
    Ok(v.data)
}

/// The interface's driver name (`ethtool -i`: `driver`).
pub fn driver(sock: &impl AsRawFd, ifname: &str) -> io::Result<String> {
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
    let end = d
        .driver
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(d.driver.len());
    Ok(String::from_utf8_lossy(&d.driver[..end]).into_owned())
}

/// The link speed in Mbit/s, when the driver knows it (`ethtool`: `Speed`).
pub fn speed_mbps(sock: &impl AsRawFd, ifname: &str) -> io::Result<Option<u32>> {
    let mut c = LinkCmd {
        cmd: GSET,
        ..LinkCmd::default()
    };
    // SAFETY: GSET reads and writes a `struct ethtool_cmd`.
    unsafe { request(sock, ifname, &mut c) }?;
    let speed = u32::from(c.speed) | (u32::from(c.speed_hi) << 16);
    // SPEED_UNKNOWN is -1 (all ones); 0 means none either.
    Ok((speed != 0 && speed != u32::MAX && speed != 0xffff).then_some(speed))
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
}
