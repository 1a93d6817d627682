//! weft: the facade crate.
