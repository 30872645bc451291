//! A users file (`login,password[,address]` per line): every line gives an
//! account or an error naming the line, never a panic; an account always
//! has a login and an address that holds an `@`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peakhour_engine::Account;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(accounts) = Account::parse_users(text) {
        for account in accounts {
            assert!(!account.login.is_empty());
            assert!(account.address.contains('@'), "{:?}", account.address);
        }
    }
});
