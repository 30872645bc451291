//! peakhour-imap (being written)
