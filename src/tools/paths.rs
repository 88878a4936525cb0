//! Confinement of file tools to the workspace root and `allow_paths`.
