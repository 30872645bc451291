//! Dovecot's connections: the ESTABLISHED TCP sockets whose local port is
//! one of the given ports, counted by asking the kernel (`sock_diag`) or,
//! where netlink is not permitted, from `/proc/net/tcp` and `tcp6`.
//!
//! The kernel writes `/proc/net/tcp` as text for every socket of the
//! namespace, TIME_WAIT ones included: a lab whose SMTP sends each open a
//! connection keeps thousands of them, and reading the file then cost
//! 30-40 ms (docs/PERFORMANCE.md, "Fourth round"). A `sock_diag` dump with a
//! state filter skips them in the kernel, and a bytecode port filter skips
//! every other ESTABLISHED socket (the generator's own ends of the same
//! connections), so only the sockets counted are sent back. What remains is
//! the kernel's walk of its established hash table.
//!
//! Messages follow `linux/netlink.h`, `linux/sock_diag.h` and
//! `linux/inet_diag.h`, in the host's byte order except ports (network
//! order in `inet_diag_sockid`, host order in the bytecode).

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto,
    setsockopt, socket, sockopt::ReceiveTimeout,
};
use nix::sys::time::TimeVal;

use crate::error::MonitorError;
use crate::{kept_files, procfs};

/// How a [`ConnectionCounter`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountMethod {
    /// A `NETLINK_SOCK_DIAG` dump of the ESTABLISHED sockets on the ports.
    SockDiag,
    /// `/proc/net/tcp` and `/proc/net/tcp6`, every socket as text.
    ProcFiles,
}

/// Counts ESTABLISHED TCP sockets by local port, IPv4 and IPv6 (an IPv6
/// socket serving an IPv4 client through a mapped address counts once, as
/// in `/proc/net/tcp6`).
#[derive(Debug)]
pub struct ConnectionCounter {
    sock_diag: Option<SockDiag>,
    proc_root: PathBuf,
    /// The text of the table just read (reused).
    bytes: Vec<u8>,
}

impl ConnectionCounter {
    /// Counts through `sock_diag` when `proc_root` is this machine's `/proc`
    /// (the kernel answers for the namespace the monitor runs in, the one
    /// `/proc/net` describes) and a netlink socket opens; else from the
    /// files under `proc_root`.
    pub fn new(proc_root: &Path) -> Self {
        let sock_diag = if proc_root == Path::new("/proc") {
            SockDiag::open().ok()
        } else {
            None
        };
        Self {
            sock_diag,
            proc_root: proc_root.to_owned(),
            bytes: Vec::new(),
        }
    }

    /// Counts from `proc_root/net/tcp` and `tcp6` only.
    pub fn proc_files(proc_root: &Path) -> Self {
        Self {
            sock_diag: None,
            proc_root: proc_root.to_owned(),
            bytes: Vec::new(),
        }
    }

    /// How the next count is made.
    pub fn method(&self) -> CountMethod {
        if self.sock_diag.is_some() {
            CountMethod::SockDiag
        } else {
            CountMethod::ProcFiles
        }
    }

    /// ESTABLISHED sockets whose local port is one of `ports`. A `sock_diag`
    /// request that fails leaves the files to count from then on (the same
    /// count, dearer). A table file that cannot be read counts as empty
    /// (no IPv6, say).
    pub fn count(&mut self, ports: &[u16]) -> Result<u32, MonitorError> {
        if let Some(diag) = &mut self.sock_diag {
            match diag.count(ports) {
                Ok(n) => return Ok(n),
                Err(_) => self.sock_diag = None,
            }
        }
        let mut n = 0;
        for table in ["net/tcp", "net/tcp6"] {
            if let Ok(text) = kept_files::read_path(&self.proc_root.join(table), &mut self.bytes) {
                n += procfs::count_established(text, ports);
            }
        }
        Ok(n)
    }
}

/// `TCPDIAG_GETSOCK` (`linux/inet_diag.h`): the request's type, and its
/// answers'.
const TCPDIAG_GETSOCK: u16 = 18;
/// `NLMSG_ERROR` and `NLMSG_DONE` (`linux/netlink.h`).
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// `NLM_F_REQUEST | NLM_F_DUMP` (`NLM_F_ROOT | NLM_F_MATCH`).
const DUMP_REQUEST: u16 = 0x1 | 0x100 | 0x200;
/// `TCP_ESTABLISHED` in the kernel's `enum tcp_state`.
const TCP_ESTABLISHED: u8 = 1;
/// `INET_DIAG_REQ_BYTECODE`: the request's attribute holding a filter.
const INET_DIAG_REQ_BYTECODE: u16 = 1;
/// Bytecode operations (`enum` in `linux/inet_diag.h`); the port
/// comparisons have been there since the first sock_diag kernels, unlike
/// `INET_DIAG_BC_S_EQ` (4.16).
const INET_DIAG_BC_JMP: u8 = 1;
const INET_DIAG_BC_S_GE: u8 = 2;
const INET_DIAG_BC_S_LE: u8 = 3;
/// `struct nlmsghdr`, `struct inet_diag_req`, `struct inet_diag_msg`.
const HEADER_LEN: usize = 16;
const REQUEST_LEN: usize = 60;
const MESSAGE_LEN: usize = 72;
/// A receive buffer the kernel's dump messages always fit in (it sizes them
/// to at most 32 KiB).
const RECEIVE_BUFFER: usize = 64 * 1024;

/// An open `NETLINK_SOCK_DIAG` socket and its buffers.
#[derive(Debug)]
struct SockDiag {
    socket: OwnedFd,
    sequence: u32,
    request: Vec<u8>,
    reply: Vec<u8>,
}

impl SockDiag {
    fn open() -> nix::Result<Self> {
        let socket = socket(
            AddressFamily::Netlink,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkSockDiag,
        )?;
        // Never let a kernel that does not answer hold the monitor up.
        setsockopt(&socket, ReceiveTimeout, &TimeVal::new(1, 0))?;
        Ok(Self {
            socket,
            sequence: 0,
            request: Vec::with_capacity(256),
            reply: vec![0; RECEIVE_BUFFER],
        })
    }

    fn count(&mut self, ports: &[u16]) -> nix::Result<u32> {
        if ports.is_empty() {
            return Ok(0);
        }
        self.sequence = self.sequence.wrapping_add(1);
        dump_request(&mut self.request, self.sequence, ports);
        let fd = self.socket.as_raw_fd();
        sendto(
            fd,
            &self.request,
            &NetlinkAddr::new(0, 0),
            MsgFlags::empty(),
        )?;
        let mut count = 0;
        loop {
            let len = match recv(fd, &mut self.reply, MsgFlags::empty()) {
                Err(Errno::EINTR) => continue,
                other => other?,
            };
            match count_replies(&self.reply[..len], self.sequence, ports)? {
                Replies::More(n) => count += n,
                Replies::Done(n) => return Ok(count + n),
            }
        }
    }
}

/// What one datagram of a dump's answer held.
#[derive(Debug, PartialEq, Eq)]
enum Replies {
    /// Sockets counted; more datagrams follow.
    More(u32),
    /// Sockets counted, and the dump's end.
    Done(u32),
}

/// Writes the dump request: every ESTABLISHED TCP socket, IPv4 and IPv6,
/// whose local port is one of `ports`, no extensions.
///
/// It is the first interface's `TCPDIAG_GETSOCK` with its `struct
/// inet_diag_req`, which the kernel still serves (`inet_diag_rcv_msg_compat`)
/// as a dump of both families at once; `SOCK_DIAG_BY_FAMILY` takes one family
/// per request, and each request walks the whole established hash table (a
/// quarter of a million buckets here, whatever the number of sockets), so
/// one request costs half of two.
fn dump_request(out: &mut Vec<u8>, sequence: u32, ports: &[u16]) {
    let bytecode = port_filter(ports);
    let attribute_len = 4 + bytecode.len();
    let total = HEADER_LEN + REQUEST_LEN + attribute_len;
    out.clear();
    // struct nlmsghdr
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_ne_bytes());
    out.extend_from_slice(&TCPDIAG_GETSOCK.to_ne_bytes());
    out.extend_from_slice(&DUMP_REQUEST.to_ne_bytes());
    out.extend_from_slice(&sequence.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes()); // the kernel's port id
    // struct inet_diag_req: family (ignored by a dump), address lengths,
    // extensions, an inet_diag_sockid of zeros (no address, port, interface
    // or cookie), the states, and the tables (unused).
    out.resize(HEADER_LEN + 4 + 48, 0);
    out.extend_from_slice(&(1u32 << TCP_ESTABLISHED).to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    // struct nlattr holding the bytecode (its length is a multiple of 4).
    out.extend_from_slice(
        &u16::try_from(attribute_len)
            .unwrap_or(u16::MAX)
            .to_ne_bytes(),
    );
    out.extend_from_slice(&INET_DIAG_REQ_BYTECODE.to_ne_bytes());
    out.extend_from_slice(&bytecode);
}

/// A `struct inet_diag_bc_op`: code, bytes to skip when the test holds,
/// bytes to skip when it does not.
fn op(out: &mut Vec<u8>, code: u8, yes: u8, no: u16) {
    out.push(code);
    out.push(yes);
    out.extend_from_slice(&no.to_ne_bytes());
}

/// Bytecode that accepts a socket whose local port is one of `ports`: for
/// each port `sport >= p && sport <= p`, the blocks joined by `JMP`s the way
/// `ss` compiles an `or`. Each test's "yes" goes to the next operation and a
/// failing test's "no" to the next block (or past the end, which rejects);
/// the `JMP` after a block that held jumps to the end, which accepts. The
/// kernel's audit follows the "yes" offsets and wants every "no" target on
/// that path, which the `JMP`s' "yes" of 4 provides.
fn port_filter(ports: &[u16]) -> Vec<u8> {
    const BLOCK: usize = 16;
    const JMP: usize = 4;
    let total = ports.len() * (BLOCK + JMP) - JMP;
    let mut code = Vec::with_capacity(total);
    for (i, &port) in ports.iter().enumerate() {
        let last = i + 1 == ports.len();
        let left = total - code.len();
        // Offsets fit: the ports of one server are few (a request longer
        // than 64 KiB would not be accepted anyway).
        let skip = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        let ge_no = if last { left + 4 } else { BLOCK + JMP };
        op(&mut code, INET_DIAG_BC_S_GE, 8, skip(ge_no));
        op(&mut code, 0, 0, port);
        // From the LE test, the next block and "past the end" are both 12 on.
        op(&mut code, INET_DIAG_BC_S_LE, 8, 12);
        op(&mut code, 0, 0, port);
        if !last {
            let to_end = total - code.len();
            op(&mut code, INET_DIAG_BC_JMP, 4, skip(to_end));
        }
    }
    code
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Counts the sockets in one datagram of the answer to request `sequence`,
/// checking each one's state and port again (a kernel that ignored the
/// filter would still be counted right).
fn count_replies(datagram: &[u8], sequence: u32, ports: &[u16]) -> nix::Result<Replies> {
    let mut count = 0;
    let mut rest = datagram;
    while rest.len() >= HEADER_LEN {
        let len = u32_at(rest, 0) as usize;
        if len < HEADER_LEN || len > rest.len() {
            return Err(Errno::EBADMSG);
        }
        let kind = u16_at(rest, 4);
        let body = &rest[HEADER_LEN..len];
        if u32_at(rest, 8) == sequence {
            match kind {
                NLMSG_DONE => return Ok(Replies::Done(count)),
                NLMSG_ERROR => {
                    let code = if body.len() >= 4 {
                        u32_at(body, 0) as i32
                    } else {
                        -(Errno::EIO as i32)
                    };
                    return Err(Errno::from_raw(-code));
                }
                TCPDIAG_GETSOCK if body.len() >= MESSAGE_LEN => {
                    let state = body[1];
                    // inet_diag_msg: family, state, timer, retrans, then the
                    // sockid whose first field is the local port, big-endian.
                    let port = u16::from_be_bytes([body[4], body[5]]);
                    if state == TCP_ESTABLISHED && ports.contains(&port) {
                        count += 1;
                    }
                }
                _ => {}
            }
        }
        // Messages are aligned to 4 bytes.
        let step = (len + 3) & !3;
        rest = rest.get(step..).unwrap_or_default();
    }
    Ok(Replies::More(count))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's `inet_diag_bc_run` over a local port, to check what the
    /// bytecode accepts without a kernel.
    fn run(code: &[u8], sport: u16) -> bool {
        let mut at = 0usize;
        let mut len = code.len() as isize;
        while len > 0 {
            let (kind, yes, no) = (code[at], code[at + 1], u16_at(code, at + 2));
            let operand = || u16_at(code, at + 6);
            let holds = match kind {
                INET_DIAG_BC_JMP => false,
                INET_DIAG_BC_S_GE => sport >= operand(),
                INET_DIAG_BC_S_LE => sport <= operand(),
                _ => true,
            };
            let skip = if holds {
                usize::from(yes)
            } else {
                usize::from(no)
            };
            at += skip;
            len -= skip as isize;
        }
        len == 0
    }

    /// The kernel's `inet_diag_bc_audit` for the operations used here.
    fn audit(code: &[u8]) -> bool {
        let on_yes_path = |remaining: isize| {
            let (mut at, mut len) = (0usize, code.len() as isize);
            while len >= 0 {
                if remaining == len {
                    return true;
                }
                if remaining > len {
                    return false;
                }
                let yes = code[at + 1];
                if yes < 4 || yes & 3 != 0 {
                    return false;
                }
                at += usize::from(yes);
                len -= isize::from(yes);
            }
            false
        };
        let (mut at, mut len) = (0usize, code.len() as isize);
        while len > 0 {
            let (kind, yes, no) = (code[at], code[at + 1], u16_at(code, at + 2));
            let min = if kind == INET_DIAG_BC_JMP { 4 } else { 8 };
            let no = no as isize;
            if no < min || no > len + 4 || no & 3 != 0 {
                return false;
            }
            if no < len && !on_yes_path(len - no) {
                return false;
            }
            let yes = isize::from(yes);
            if yes < min || yes > len + 4 || yes & 3 != 0 {
                return false;
            }
            at += yes as usize;
            len -= yes;
        }
        len == 0
    }

    #[test]
    fn the_port_filter_accepts_exactly_its_ports_and_passes_the_audit() {
        for ports in [&[143][..], &[143, 993], &[110, 143, 993, 995, 10143]] {
            let code = port_filter(ports);
            assert!(audit(&code), "{ports:?}");
            for sport in [
                0, 1, 109, 110, 111, 142, 143, 144, 992, 993, 994, 995, 10143, 65535,
            ] {
                assert_eq!(
                    run(&code, sport),
                    ports.contains(&sport),
                    "{ports:?} {sport}"
                );
            }
        }
    }

    #[test]
    fn replies_count_established_sockets_on_the_ports_until_done() {
        let message = |sequence: u32, state: u8, port: u16| {
            let mut m = Vec::new();
            m.extend_from_slice(&((HEADER_LEN + MESSAGE_LEN) as u32).to_ne_bytes());
            m.extend_from_slice(&TCPDIAG_GETSOCK.to_ne_bytes());
            m.extend_from_slice(&0u16.to_ne_bytes());
            m.extend_from_slice(&sequence.to_ne_bytes());
            m.extend_from_slice(&0u32.to_ne_bytes());
            let mut body = vec![0u8; MESSAGE_LEN];
            body[0] = 2;
            body[1] = state;
            body[4..6].copy_from_slice(&port.to_be_bytes());
            m.extend_from_slice(&body);
            m
        };
        let mut datagram = message(7, TCP_ESTABLISHED, 143);
        datagram.extend(message(7, TCP_ESTABLISHED, 40000)); // the client's end
        datagram.extend(message(7, 6, 143)); // TIME_WAIT
        datagram.extend(message(6, TCP_ESTABLISHED, 143)); // an older request's
        datagram.extend(message(7, TCP_ESTABLISHED, 993));
        assert_eq!(
            count_replies(&datagram, 7, &[143, 993]),
            Ok(Replies::More(2))
        );
        let mut done = Vec::new();
        done.extend_from_slice(&20u32.to_ne_bytes());
        done.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        done.extend_from_slice(&0u16.to_ne_bytes());
        done.extend_from_slice(&7u32.to_ne_bytes());
        done.extend_from_slice(&0u32.to_ne_bytes());
        done.extend_from_slice(&0u32.to_ne_bytes());
        datagram.extend(&done);
        assert_eq!(count_replies(&datagram, 7, &[143]), Ok(Replies::Done(1)));
        let mut error = done.clone();
        error[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        error[16..20].copy_from_slice(&(-22i32).to_ne_bytes());
        assert_eq!(count_replies(&error, 7, &[143]), Err(Errno::EINVAL));
        assert_eq!(
            count_replies(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 7, &[143]),
            Err(Errno::EBADMSG)
        );
    }
}
