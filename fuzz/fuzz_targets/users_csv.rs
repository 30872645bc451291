//! A users file (`login,password[,address]` per line, CSV), as bytes: every
//! file gives accounts or an error naming the line, never a panic; an
//! account always has a login and an address that passes the one address
//! check (issue 26, item 4), whatever the bytes (not UTF-8, a byte-order
//! mark, quotes, extra columns).
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_engine::Account;
use peakhour_workload::address::check_address;

fuzz_target!(|data: &[u8]| {
    if let Ok(accounts) = Account::parse_users(data) {
        for account in accounts {
            assert!(!account.login.is_empty());
            assert!(check_address(&account.address).is_ok(), "{:?}", account.address);
        }
    }
});
