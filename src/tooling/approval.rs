//! Approval policy and rules: run, ask or deny a call.
