-- The append's one write statement (Sources/LedgerPostgres/Store/AppendStatements.swift) writes the stream head, the
-- events and the projection rows together, each part gated on the stream's version still being the one the append
-- read. One part cannot be gated that way: the transaction row, which another order may have claimed since the read.
-- The statement then calls this function, which aborts the whole statement (nothing of it is kept) with
-- serialization_failure: the store reads again and the domain refuses the claim with the winner in view.
CREATE FUNCTION ledger_append_requires(holds boolean, what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF NOT holds THEN
        RAISE EXCEPTION 'append lost a race: %', what USING ERRCODE = 'serialization_failure';
    END IF;
    RETURN true;
END
$$;
