//! weft-runtime: the driver of runs.
