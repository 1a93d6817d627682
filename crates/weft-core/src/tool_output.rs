//! Live tool output: a cheap, clonable sink a tool writes output fragments to
//! while it runs. The runtime attaches one to every [`crate::tool::ToolRequest`]
//! and turns what it receives into `ToolOutputDelta` run events; a registry
//! provider attaches one that publishes to the call's result stream. A
//! detached sink (the default) drops everything.

use std::fmt;
use std::sync::Arc;

/// Receives output fragments: `(stream, delta)`, e.g. `("stdout", "step 1\n")`.
pub type OutputFn = dyn Fn(&str, &str) + Send + Sync;

/// Where a running tool's output fragments go; best effort, in order.
#[derive(Clone, Default)]
pub struct OutputSink(Option<Arc<OutputFn>>);

impl OutputSink {
    /// A sink that hands every fragment to `f`. `f` must not block.
    pub fn new(f: impl Fn(&str, &str) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(f)))
    }

    /// A sink that drops everything.
    pub fn detached() -> Self {
        Self(None)
    }

    /// Whether fragments go anywhere.
    pub fn is_attached(&self) -> bool {
        self.0.is_some()
    }

    /// Publishes one fragment of output on `stream` (`stdout`, `stderr`, `log`, `progress`).
    pub fn publish(&self, stream: &str, delta: &str) {
        if let Some(f) = &self.0 {
            f(stream, delta);
        }
    }
}

impl fmt::Debug for OutputSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_attached() {
            "OutputSink(attached)"
        } else {
            "OutputSink(detached)"
        })
    }
}

/// Sinks never make two requests differ: equality is about the call.
impl PartialEq for OutputSink {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn forwards_in_order_and_detached_drops() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let sink = OutputSink::new(move |stream, delta| {
            s.lock().unwrap().push(format!("{stream}:{delta}"));
        });
        let clone = sink.clone();
        sink.publish("stdout", "a");
        clone.publish("stderr", "b");
        OutputSink::detached().publish("stdout", "lost");
        assert_eq!(*seen.lock().unwrap(), vec!["stdout:a", "stderr:b"]);
        assert_eq!(sink, OutputSink::detached());
        assert_eq!(format!("{sink:?}"), "OutputSink(attached)");
    }
}
