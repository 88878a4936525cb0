//! The built-in tools' schemas and the byte-stable tools array.
