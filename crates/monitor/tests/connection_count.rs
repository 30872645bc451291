//! Dovecot's connection count both ways, `sock_diag` and `/proc/net/tcp`,
//! against real sockets on loopback: ESTABLISHED sockets on the watched
//! ports count; TIME_WAIT and CLOSE_WAIT sockets on those ports, the
//! clients' ends and other ports' connections do not.

use std::io::Read as _;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;

use peakhour_monitor::{ConnectionCounter, CountMethod};

/// Open connections to one listener, both ends kept.
fn connect(listener: &TcpListener, from: SocketAddr, n: usize) -> Vec<TcpStream> {
    let port = listener.local_addr().expect("a bound listener").port();
    let to = SocketAddr::new(from.ip(), port);
    let mut ends = Vec::new();
    for _ in 0..n {
        ends.push(TcpStream::connect(to).expect("connect on loopback"));
        ends.push(listener.accept().expect("accept on loopback").0);
    }
    ends
}

#[test]
fn sock_diag_and_proc_files_count_the_same_established_sockets() {
    let loopback4 = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let loopback6 = SocketAddr::from((Ipv6Addr::LOCALHOST, 0));
    let imap = TcpListener::bind(loopback4).unwrap();
    let other = TcpListener::bind(loopback4).unwrap();
    let mut ports = vec![imap.local_addr().unwrap().port()];
    let mut open = connect(&imap, loopback4, 3);
    let mut expected = 3;
    // Not watched: its connections count nowhere.
    open.extend(connect(&other, loopback4, 2));
    // The server closes first: its end (on the watched port) goes to
    // TIME_WAIT once the client closes too.
    for _ in 0..4 {
        let mut ends = connect(&imap, loopback4, 1);
        let mut client = ends.remove(0);
        drop(ends);
        let _ = client.read(&mut [0; 1]);
    }
    // The client closes and the server does not: CLOSE_WAIT on the watched port.
    let mut half_closed = connect(&imap, loopback4, 1);
    half_closed.remove(0);
    open.extend(half_closed);
    // IPv6, and an IPv4 client of a dual-stack listener (a mapped address
    // in tcp6), when this host has IPv6.
    if let Ok(six) = TcpListener::bind(loopback6) {
        ports.push(six.local_addr().unwrap().port());
        open.extend(connect(&six, loopback6, 2));
        expected += 2;
        let dual = TcpListener::bind(SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))).unwrap();
        ports.push(dual.local_addr().unwrap().port());
        open.extend(connect(&dual, loopback4, 1));
        expected += 1;
    }

    let mut from_files = ConnectionCounter::proc_files(Path::new("/proc"));
    assert_eq!(from_files.method(), CountMethod::ProcFiles);
    assert_eq!(from_files.count(&ports).unwrap(), expected);
    let mut from_kernel = ConnectionCounter::new(Path::new("/proc"));
    assert_eq!(
        from_kernel.method(),
        CountMethod::SockDiag,
        "sock_diag needs no privilege; a sandbox that forbids netlink falls back"
    );
    assert_eq!(from_kernel.count(&ports).unwrap(), expected);
    assert_eq!(
        from_kernel.method(),
        CountMethod::SockDiag,
        "no fallback happened"
    );
    assert_eq!(from_kernel.count(&[]).unwrap(), 0);
    assert_eq!(from_files.count(&[]).unwrap(), 0);
    drop(open);
    assert_eq!(from_kernel.count(&ports).unwrap(), 0);
    assert_eq!(from_files.count(&ports).unwrap(), 0);
}

#[test]
fn a_fake_proc_root_is_counted_from_its_files() {
    let counter = ConnectionCounter::new(Path::new("/nonexistent/proc"));
    assert_eq!(counter.method(), CountMethod::ProcFiles);
}
