//! The hub's work controllers (ocm-core.md §3.11, §6.2 rows "manifestworkgarbagecollection" and
//! "manifestworkreplicaset"), on a TestEnv hub (or the real hub of `OCM_TEST_HUB_KUBECONFIG`).

mod garbage_collection;
mod replica_set;
