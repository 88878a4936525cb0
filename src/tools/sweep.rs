//! The start-up sweep of process groups recorded as running.
