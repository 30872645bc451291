//! peakhour elsewhere: the manifests that run a sharded `peakhour run` on a
//! Kubernetes cluster ([`k8s`]). Kept out of the binary so the binary stays
//! glue, and out of the engine, which has nothing to do with where it runs.
#![deny(missing_docs)]

pub mod k8s;
