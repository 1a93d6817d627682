//! A leader batcher: amortizes one Redis round trip (a script or a
//! pipeline) over the items callers submit at the same time. It owns the
//! queue of waiting items and the "a batch is in flight" state.
//!
//! A caller that finds nothing in flight sends its own item at once, as a
//! batch of one, on its own task: no hop, no timer. While a batch is in
//! flight, items queue; when it finishes, a spawned task sends the queued
//! items (at most `max_batch` each time) until the queue is empty. When the
//! queue is full the caller sends its item alone, outside the batching.
//! A caller's future may be dropped at any point: a drop guard ends its
//! flight, and queued items of dropped callers are skipped, not sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use crate::error::RegistryError;

/// What sending one batch yields: one result per item, in order, or an
/// error for the whole batch.
pub(crate) type BatchResult<O> = Result<Vec<Result<O, RegistryError>>, RegistryError>;

type SendFn<I, O> = Box<dyn Fn(Vec<I>) -> BoxFuture<'static, BatchResult<O>> + Send + Sync>;
type Waiter<I, O> = (I, oneshot::Sender<Result<O, RegistryError>>);

/// Batches items of type `I` into calls of a send function.
pub(crate) struct Batcher<I, O> {
    inner: Arc<Inner<I, O>>,
}

struct Inner<I, O> {
    state: Mutex<State<I, O>>,
    send: SendFn<I, O>,
    max_batch: usize,
    max_queue: usize,
}

struct State<I, O> {
    in_flight: bool,
    queue: VecDeque<Waiter<I, O>>,
}

/// Held while a batch is in flight; dropping it (done or cancelled) sends
/// the next batch or clears the flag.
struct Flight<I: 'static + Send, O: 'static + Send>(Arc<Inner<I, O>>);

impl<I: 'static + Send, O: 'static + Send> Drop for Flight<I, O> {
    fn drop(&mut self) {
        loop {
            let next = {
                let mut st = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
                let n = st.queue.len().min(self.0.max_batch);
                let next: Vec<_> = st.queue.drain(..n).collect();
                if next.is_empty() {
                    st.in_flight = false;
                    return;
                }
                next
            };
            // Outside a runtime the queued callers are dropped (they see an error).
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let flight = Flight(self.0.clone());
                rt.spawn(async move {
                    flight.0.run(next).await;
                    drop(flight);
                });
                return;
            }
        }
    }
}

impl<I: 'static + Send, O: 'static + Send> Batcher<I, O> {
    /// A batcher sending at most `max_batch` items at once and queueing at
    /// most `max_queue` (both at least 1).
    pub(crate) fn new(
        max_batch: usize,
        max_queue: usize,
        send: impl Fn(Vec<I>) -> BoxFuture<'static, BatchResult<O>> + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    in_flight: false,
                    queue: VecDeque::new(),
                }),
                send: Box::new(send),
                max_batch: max_batch.max(1),
                max_queue: max_queue.max(1),
            }),
        }
    }

    /// Sends `item` (alone or with others) and returns its own result.
    pub(crate) async fn submit(&self, item: I) -> Result<O, RegistryError> {
        enum Path<I, O> {
            Lead(I),
            Alone(I),
            Wait(oneshot::Receiver<Result<O, RegistryError>>),
        }
        let path = {
            let mut st = self
                .inner
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !st.in_flight {
                st.in_flight = true;
                Path::Lead(item)
            } else if st.queue.len() >= self.inner.max_queue {
                Path::Alone(item)
            } else {
                let (tx, rx) = oneshot::channel();
                st.queue.push_back((item, tx));
                Path::Wait(rx)
            }
        };
        match path {
            Path::Lead(item) => {
                let flight = Flight(self.inner.clone());
                let res = first((self.inner.send)(vec![item]).await);
                drop(flight);
                res
            }
            Path::Alone(item) => first((self.inner.send)(vec![item]).await),
            Path::Wait(rx) => rx.await.unwrap_or_else(|_| {
                Err(RegistryError::Batch(
                    "the batch was dropped before it was sent".into(),
                ))
            }),
        }
    }
}

impl<I, O> Inner<I, O> {
    /// Sends one batch of queued items and answers each waiter.
    async fn run(&self, batch: Vec<Waiter<I, O>>) {
        let (items, waiters): (Vec<I>, Vec<_>) =
            batch.into_iter().filter(|(_, tx)| !tx.is_closed()).unzip();
        if items.is_empty() {
            return;
        }
        let n = items.len();
        for (tx, res) in waiters.into_iter().zip(spread((self.send)(items).await, n)) {
            let _ = tx.send(res);
        }
    }
}

/// One result per item: the batch's own, or its error given to every item
/// (as is when there is one item).
fn spread<O>(res: BatchResult<O>, n: usize) -> Vec<Result<O, RegistryError>> {
    let msg = match res {
        Ok(v) if v.len() == n => return v,
        Ok(v) => format!("{} results for {n} items", v.len()),
        Err(e) if n == 1 => return vec![Err(e)],
        Err(e) => e.to_string(),
    };
    (0..n)
        .map(|_| Err(RegistryError::Batch(msg.clone())))
        .collect()
}

fn first<O>(res: BatchResult<O>) -> Result<O, RegistryError> {
    spread(res, 1)
        .into_iter()
        .next()
        .unwrap_or_else(|| Err(RegistryError::Batch("no result".into())))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use futures_util::FutureExt;

    use super::Batcher;
    use crate::error::RegistryError;

    /// Doubles items after `ms`; item 0 never finishes; item 13 fails the batch.
    fn doubler(
        ms: u64,
        max_batch: usize,
        max_queue: usize,
    ) -> (Batcher<u32, u32>, Arc<Mutex<Vec<usize>>>) {
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let s = sizes.clone();
        let b = Batcher::new(max_batch, max_queue, move |items: Vec<u32>| {
            s.lock().unwrap().push(items.len());
            async move {
                if items.contains(&0) {
                    std::future::pending::<()>().await;
                }
                tokio::time::sleep(Duration::from_millis(ms)).await;
                if items.contains(&13) {
                    return Err(RegistryError::Config("boom".into()));
                }
                Ok(items.into_iter().map(|i| Ok(i * 2)).collect())
            }
            .boxed()
        });
        (b, sizes)
    }

    #[tokio::test]
    async fn a_lone_item_goes_out_alone() {
        let (b, sizes) = doubler(0, 256, 4096);
        assert_eq!(b.submit(21).await.unwrap(), 42);
        assert_eq!(b.submit(4).await.unwrap(), 8);
        assert_eq!(*sizes.lock().unwrap(), vec![1, 1]);
    }

    #[tokio::test]
    async fn concurrent_items_share_batches_within_the_cap() {
        let (b, sizes) = doubler(20, 4, 4096);
        let calls = (1..=11).map(|i| b.submit(i));
        let got = futures_util::future::join_all(calls).await;
        for (i, r) in (1..=11).zip(got) {
            assert_eq!(r.unwrap(), i * 2);
        }
        assert_eq!(*sizes.lock().unwrap(), vec![1, 4, 4, 2]);
    }

    #[tokio::test]
    async fn a_full_queue_sends_alone() {
        let (b, sizes) = doubler(20, 256, 2);
        let got = futures_util::future::join_all((1..=5).map(|i| b.submit(i))).await;
        assert!(got.into_iter().all(|r| r.is_ok()));
        assert_eq!(*sizes.lock().unwrap(), vec![1, 1, 1, 2]);
    }

    #[tokio::test]
    async fn a_failed_batch_fails_each_item() {
        let (b, _) = doubler(20, 256, 4096);
        let got = futures_util::future::join_all([1, 13, 2].map(|i| b.submit(i))).await;
        assert_eq!(*got[0].as_ref().unwrap(), 2);
        for r in &got[1..] {
            let e = r.as_ref().unwrap_err();
            assert!(
                matches!(e, RegistryError::Batch(m) if m.contains("boom")),
                "{e}"
            );
        }
        assert!(matches!(b.submit(13).await, Err(RegistryError::Config(_))));
    }

    #[tokio::test]
    async fn dropped_callers_do_not_wedge_the_batcher() {
        let (b, sizes) = doubler(5, 256, 4096);
        // A leader dropped mid-send, with a queued caller dropped too.
        let lead = tokio::time::timeout(Duration::from_millis(20), b.submit(0));
        let queued = tokio::time::timeout(Duration::from_millis(10), b.submit(7));
        let (lead, queued) = tokio::join!(lead, queued);
        assert!(lead.is_err() && queued.is_err());
        assert_eq!(b.submit(5).await.unwrap(), 10);
        // A waiter queued behind a stuck leader is still answered.
        let lead = tokio::time::timeout(Duration::from_millis(20), b.submit(0));
        let (lead, waiter) = tokio::join!(lead, b.submit(3));
        assert!(lead.is_err());
        assert_eq!(waiter.unwrap(), 6);
        assert_eq!(b.submit(5).await.unwrap(), 10);
        // The dropped caller's item 7 was never sent.
        assert_eq!(*sizes.lock().unwrap(), vec![1, 1, 1, 1, 1]);
    }
}
