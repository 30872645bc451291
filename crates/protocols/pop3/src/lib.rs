//! peakhour-pop3 (being written)
