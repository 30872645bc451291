//! # peakhour-lab (being written)
