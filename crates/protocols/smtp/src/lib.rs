//! peakhour-smtp (being written)
