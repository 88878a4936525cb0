//! The supervisor process that holds a shell command's process group and
//! kills it when strata dies.
