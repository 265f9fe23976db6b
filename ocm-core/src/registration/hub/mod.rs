//! The hub side of registration: the controllers a cluster manager runs.

pub mod addon_status;
pub mod cleanup;
pub mod clusterset;
