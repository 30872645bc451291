//! Issue 25, item 3: a connection opened from a given source address
//! reaches the server from that address (Linux routes all of 127/8 to `lo`).
#![allow(clippy::unwrap_used)] // test helpers fail loudly by design

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use peakhour_net::Transport;
use tokio::net::TcpListener;

#[tokio::test]
async fn issue_25_item_3_a_connection_from_a_source_address_arrives_from_it() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    for last in [2u8, 3] {
        let source = IpAddr::V4(Ipv4Addr::new(127, 0, 0, last));
        let connecting =
            Transport::connect_plain_from(Some(source), "127.0.0.1", port, Duration::from_secs(5));
        let (client, accepted) = tokio::join!(connecting, listener.accept());
        let _client = client.unwrap();
        let (_server_side, peer) = accepted.unwrap();
        assert_eq!(peer.ip(), source);
    }
    // Without a source, the kernel's choice: 127.0.0.1 to 127.0.0.1.
    let connecting = Transport::connect_plain_from(None, "127.0.0.1", port, Duration::from_secs(5));
    let (client, accepted) = tokio::join!(connecting, listener.accept());
    let _client = client.unwrap();
    assert_eq!(accepted.unwrap().1.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
}

#[tokio::test]
async fn issue_25_item_3_a_source_of_the_wrong_family_is_named() {
    let source = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let error = Transport::connect_plain_from(Some(source), "::1", 9, Duration::from_secs(5))
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("source address 127.0.0.2"), "{error}");
}
