-- Answers to running tools' questions (elicitations) of runs another
-- process drives (JSON, see weft_core::lease::RemoteAnswer); the lease
-- holder polls for the answers on its runs, hands each to its driver and
-- deletes it. A commit that stops the run deletes what is left.
CREATE TABLE run_answers (
    run_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    answer TEXT NOT NULL,
    seq BIGINT NOT NULL,
    PRIMARY KEY (run_id, item_id)
);
