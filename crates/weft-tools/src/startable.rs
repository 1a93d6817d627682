//! [`StartableToolSet`]: a wrapper giving a toolset a lazy, single-flight
//! start/stop lifecycle, with failure-streak and recovery reporting.
//!
//! The wrapped toolset's own [`Lifecycle`] (found through its wrapper chain)
//! is started on first use. Concurrent first callers wait for one attempt
//! and share its outcome; a failed start is retried by the next use after
//! the failed attempt. The wrapper exposes itself as the [`Lifecycle`]
//! capability, so the runtime can start and stop it explicitly too.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use weft_core::tool::{RetryHint, RetryReason, ToolError, ToolIdent, ToolRequest, ToolSpec};

use crate::capability::{Lifecycle, find_lifecycle};
use crate::toolset::{ToolFailure, ToolReply, ToolSet};

/// A toolset started lazily (once, however many callers race) and stoppable.
pub struct StartableToolSet<T> {
    inner: T,
    /// Held for the whole of a start attempt or a stop: the single flight.
    gate: tokio::sync::Mutex<()>,
    /// Fast path for calls once started.
    started: AtomicBool,
    /// Completed start attempts; a waiter that sees it move shares that attempt's outcome.
    attempts: AtomicU64,
    status: Mutex<Status>,
}

#[derive(Debug, Default)]
struct Status {
    last_error: Option<ToolError>,
    failing: bool,
    failure_reported: bool,
    recovery_pending: bool,
}

impl<T: ToolSet> StartableToolSet<T> {
    /// Wraps `inner`; nothing starts until the first use or [`StartableToolSet::start`].
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            gate: tokio::sync::Mutex::new(()),
            started: AtomicBool::new(false),
            attempts: AtomicU64::new(0),
            status: Mutex::new(Status::default()),
        }
    }

    /// The wrapped toolset.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// Whether the toolset is started.
    pub fn is_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Starts the toolset unless it is started; callers racing here share one attempt.
    pub async fn start(&self) -> Result<(), ToolError> {
        if self.is_started() {
            return Ok(());
        }
        let seen = self.attempts.load(Ordering::Acquire);
        let _gate = self.gate.lock().await;
        if self.is_started() {
            return Ok(());
        }
        if self.attempts.load(Ordering::Acquire) != seen
            && let Some(error) = self.status().last_error.clone()
        {
            // An attempt ran while this caller waited, and failed: share it.
            return Err(error);
        }
        let result = match find_lifecycle(&self.inner) {
            Some(lifecycle) => lifecycle.start().await,
            None => Ok(()),
        };
        let result = result.map_err(|e| self.start_error(e));
        {
            let mut status = self.status();
            match &result {
                Ok(()) => {
                    status.recovery_pending |= status.failing;
                    status.failing = false;
                    status.last_error = None;
                }
                Err(error) => {
                    if !status.failing {
                        status.failing = true;
                        status.failure_reported = false;
                    }
                    status.last_error = Some(error.clone());
                }
            }
        }
        self.started.store(result.is_ok(), Ordering::Release);
        self.attempts.fetch_add(1, Ordering::AcqRel);
        result
    }

    /// Stops the toolset if started and resets the failure and recovery state.
    pub async fn stop(&self) -> Result<(), ToolError> {
        let _gate = self.gate.lock().await;
        *self.status() = Status::default();
        if !self.started.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        match find_lifecycle(&self.inner) {
            Some(lifecycle) => lifecycle.stop().await,
            None => Ok(()),
        }
    }

    /// True once per failure streak: the first time it is asked after a start failed.
    pub fn should_report_failure(&self) -> bool {
        let mut status = self.status();
        if status.failing && !status.failure_reported {
            status.failure_reported = true;
            return true;
        }
        false
    }

    /// True once after the first successful start that ends a failure streak.
    pub fn consume_recovery(&self) -> bool {
        std::mem::take(&mut self.status().recovery_pending)
    }

    /// The error of the last failed start, while the failure streak lasts.
    pub fn last_error(&self) -> Option<ToolError> {
        self.status().last_error.clone()
    }

    fn status(&self) -> MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn start_error(&self, cause: ToolError) -> ToolError {
        let mut error = ToolError::new(
            ToolError::UNAVAILABLE,
            format!(
                "toolset `{}` failed to start: {}",
                self.inner.name(),
                cause.message
            ),
        );
        error.causes.push(cause.to_string());
        error.causes.extend(cause.causes);
        error
    }

    fn unavailable(&self, error: ToolError, tool: &ToolIdent) -> ToolFailure {
        let hint = RetryHint::new(RetryReason::ToolUnavailable)
            .for_tool(tool.clone())
            .with_message("the toolset could not be started; try again later or use another tool");
        ToolFailure {
            error,
            retry_hint: Some(hint),
        }
    }
}

#[async_trait]
impl<T: ToolSet> ToolSet for StartableToolSet<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        self.start().await?;
        self.inner.list_tools().await
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        if let Err(error) = self.start().await {
            return Err(self.unavailable(error, &request.name));
        }
        self.inner.call_tool(request).await
    }

    fn inner(&self) -> Option<&dyn ToolSet> {
        Some(&self.inner)
    }

    fn lifecycle(&self) -> Option<&dyn Lifecycle> {
        Some(self)
    }
}

#[async_trait]
impl<T: ToolSet> Lifecycle for StartableToolSet<T> {
    async fn start(&self) -> Result<(), ToolError> {
        StartableToolSet::start(self).await
    }

    async fn stop(&self) -> Result<(), ToolError> {
        StartableToolSet::stop(self).await
    }
}

#[cfg(test)]
#[path = "startable_tests.rs"]
mod tests;
