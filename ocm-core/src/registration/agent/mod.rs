//! The managed-cluster side of registration: the controllers a klusterlet's registration agent runs.
