//! Bounded capture of a streamed output: head and tail in memory, the whole
//! written to the spill file.
