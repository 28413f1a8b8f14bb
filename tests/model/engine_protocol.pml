/*
 * Journalled engine changes of gravimeta (intent, fenced engine call, store step, repair behind a fence
 * barrier), with catalog renames, imports of engine-only tables, engine-only drops and the sqlite
 * connector's file unlink, under leases that expire and are stolen. docs/claim-model.md says what it
 * covers and where it differs from the code; tests/model/test_claim_model.py runs it.
 *
 * The claim itself is abstract here (claim_protocol.pml checks it at the grain of SQL statements): one
 * lease over the related scopes of the run (every scope here is related: the metalake, the catalog,
 * the schema), granted when no live claim exists (an expired one is stolen), with a fence above every
 * earlier grant; the clock may expire the live claim at any moment, and a holder does not notice. Every
 * store transaction of an operation is behind the fence guard: it commits only while its claim is
 * live and still its own (FenceLost otherwise).
 *
 * The engine keeps, per fence key, the highest fence it has seen (the barrier). A fenced engine call
 * with token f for key k is refused (StaleFence, nothing changed) when the engine has seen a higher
 * fence for k or a related key; otherwise the engine records f for k and makes the change, in one
 * step (the sqlite catalog checks and changes in one transaction). A call is sent only while its
 * claim is live; it may arrive any time later (the window between send and arrival is a stalled
 * request, a slow network, a GC pause).
 *
 * Configurations (spin -a -D...):
 *   (none)        TABLES: table t of schema s, made in the engine outside gravimeta (the store lacks it).
 *                 A GET of t (import), a DROP of t, a rename of the catalog
 *   REPAIRER      the same, and a `gravimeta repair` run (opt-in: 6.7 M states)
 *   RENAME        the store and the engine have t (acknowledged): a DROP of t, a catalog rename, a
 *                 `gravimeta repair` run
 *   SCHEMAS       schema s (a sqlite schema file): store and engine have s (incarnation 1); a DROP of
 *                 s, a CREATE of s (incarnation 2), a catalog rename
 * Every configuration ends with one more repair run once every operation is over (FINAL).
 * Reverted fixes (each must give a counterexample):
 *   BUG_PATH_KEY  engine fences keyed by scope path, not by the object's identity: a catalog rename
 *                 relabels an open intent's key, so its repair raises the barrier on the new path while
 *                 the old call (old path) is judged unrelated
 *   BUG_IMPORT    an engine-only drop records no intent, and an import reads the engine without
 *                 meeting the barrier
 *   BUG_IMPORT_INTENT, BUG_IMPORT_BARRIER  one half of that each; each verifies, the other half alone
 *                 closing the window in these configurations
 *   BUG_UNLINK    sqlite files named by the schema's name (not its incarnation) and the drop's unlink of
 *                 that name after its fenced transaction (no tombstone)
 *   NO_BARRIER    a repair decides without raising the barrier: a check that the properties are not
 *                 vacuous (not a fix of this design: the barrier is its core)
 *
 * Properties:
 *   1. settled => agree: whenever no intent is open and no engine call or unlink is under way, the
 *      store and the engine agree (TABLES' table made outside gravimeta agrees with a store that lacks
 *      it: it is importable).
 *   2. no acknowledged change is lost: after an answer that says what an object now is (created,
 *      dropped, imported: loaded), and until a later change of that object commits in the store, the
 *      store and the engine both show it whenever no intent on that object is open.
 *   3. at the end (every operation over, then one last repair run under a lasting claim, every call
 *      arrived) no intent is left open, and 1 holds.
 */

#define NOPS 4           /* operation processes at most (ids 1..NOPS); the last repair run is FINAL */
#define FINAL 5
#define NSLOT 6

/* objects */
#define T 0              /* table t in schema s (TABLES) */
#define S 1              /* schema s (SCHEMAS) */
#define EXT 7            /* t's incarnation made in the engine outside gravimeta */
#define BROKEN 9         /* the engine lists the schema, but its file is gone */

/* intent kinds */
#define DROP 1
#define EDROP 2          /* drop of an object the store does not have (engine-only) */
#define CREATE 3

/* the claim (abstract lease) */
bool cl_live;
byte cl_holder;
byte cl_fence;
byte fctr;
#define HELD (cl_live && cl_holder == me && cl_fence == f)

/* the store */
byte st[2];              /* incarnation the store has (0: none) */
byte catname;            /* the catalog's name: 0 "c", 1 "c2" (its id never changes) */

/* the engine */
byte reg[2];             /* incarnation registered under the object's name (0: none) */
#ifdef BUG_UNLINK
byte fname;              /* the incarnation whose data is in the file named after s (0: no file) */
#define HASFILE(i) (fname == (i))
#else
byte files;              /* bit i: the file of incarnation i exists */
byte tombs;              /* bit i: incarnation i's file, renamed to a tombstone by its fenced drop */
#define HASFILE(i) ((files >> (i)) & 1)
#endif
#define ENG(o) ((o) == T -> reg[T] : (reg[S] == 0 -> 0 : (HASFILE(reg[S]) -> reg[S] : BROKEN)))

/* fence keys: 0 the catalog, 1 the schema; with BUG_PATH_KEY the path, so + 2 * catalog name */
byte bar[4];
#ifdef BUG_PATH_KEY
#define KEY(level) (catname * 2 + (level))
#else
#define KEY(level) (level)   /* (catalog id, schema incarnation): a rename changes neither */
#endif
#define RELATED(a, b) ((a) / 2 == (b) / 2)
#define STALE(k, tok) (bar[((k) / 2) * 2] > (tok) || bar[((k) / 2) * 2 + 1] > (tok))
#define RAISE(k, tok) if :: bar[k] < (tok) -> bar[k] = (tok) :: else -> skip fi

/* the journal: at most one intent per operation, indexed by its process id */
bool in_open[NSLOT];
byte in_kind[NSLOT];
byte in_obj[NSLOT];
byte in_inc[NSLOT];
byte in_key[NSLOT];
#define OPEN_ON(o) (in_open[1] && in_obj[1] == (o) || in_open[2] && in_obj[2] == (o) || \
                    in_open[3] && in_obj[3] == (o) || in_open[4] && in_obj[4] == (o))
#define ANY_OPEN (in_open[1] || in_open[2] || in_open[3] || in_open[4])

/* ghosts */
byte calls;              /* engine calls sent and not yet ended (arrival, and a drop's unlink) */
bool acked[2];           /* an answer told what the object is, and no store change of it committed since */
byte ack[2];             /* ... what it told */
byte ops_done;
bool final_done;

#define AGREE(o) (st[o] == ENG(o) || (st[o] == 0 && ENG(o) == EXT))
#define COMMITTED(o) acked[o] = false
#define ACK(o, what) ack[o] = (what); acked[o] = true

/* ------------------------------------------------------------------------------------------------
 * The claim: wait until no live claim exists (an expired one is stolen), take the next fence.
 */
inline claim() {
  atomic { !cl_live -> fctr++; f = fctr; cl_holder = me; cl_fence = f; cl_live = true;
           printf("p%d: claim granted, fence %d\n", me, f) }
}

inline release() {
  atomic { if :: HELD -> cl_live = false :: else -> skip fi; printf("p%d: done\n", me) }
}

/* ------------------------------------------------------------------------------------------------
 * Repair of the open intents (journal.Repairer): those related to `key` (an operation's scope, the
 * next claimant's duty) or all of them (`all`). Each: the barrier (a fenced call under the repair's
 * claim: refused if a higher fence was seen, which means this claim was stolen), one observation of
 * the engine, then one guarded store transaction that rolls the intent forward (the store change) or
 * back (the intent is discarded).
 */
inline repair(all) {
  j = 1;
  do
  :: j <= NOPS ->
     if
     :: in_open[j] && (all || RELATED(in_key[j], key)) ->
#ifndef NO_BARRIER
        if
        :: atomic { HELD && !STALE(in_key[j], f) -> RAISE(in_key[j], f);
                    printf("p%d: repair of intent %d: barrier %d on key %d\n", me, j, f, in_key[j]) }
        :: atomic { !(HELD && !STALE(in_key[j], f)) -> printf("p%d: repair: FenceLost\n", me) }; goto lost
        fi;
#endif
        atomic {
          if
          :: in_kind[j] == DROP -> seen = (ENG(in_obj[j]) == 0)
          :: in_kind[j] == EDROP -> seen = (reg[in_obj[j]] == 0)
          :: in_kind[j] == CREATE -> seen = (reg[in_obj[j]] != 0)
          fi;
          printf("p%d: repair of intent %d observes: applied %d\n", me, j, seen)
        };
        atomic {
          if
          :: HELD && in_open[j] ->
             if
             :: seen && in_kind[j] == DROP -> st[in_obj[j]] = 0; COMMITTED(in_obj[j])
             :: seen && in_kind[j] == CREATE -> st[in_obj[j]] = in_inc[j]; COMMITTED(in_obj[j])
             :: else -> skip
             fi;
             in_open[j] = false;
             printf("p%d: intent %d rolled %d (1 forward, 0 back)\n", me, j, seen)
          :: HELD && !in_open[j] -> skip   /* settled elsewhere */
          :: !HELD -> printf("p%d: repair: FenceLost\n", me); seen = 2
          fi
        };
        if :: seen == 2 -> goto lost :: else -> seen = 0 fi
     :: else -> skip
     fi;
     j++
  :: else -> j = 0; break
  od
}

/* ------------------------------------------------------------------------------------------------
 * A journalled operation's engine call: sent under the claim (call_fence: nothing is sent once the
 * claim is not live), then its arrival at the engine (check the barrier and change, one step), and,
 * for a schema drop, the unlink of its file after that transaction. `res`: 1 applied, 2 refused.
 */
inline send(level) {
  atomic {
    if
    :: HELD -> calls++; k = KEY(level); printf("p%d: engine call sent, fence %d key %d\n", me, f, k)
    :: else -> res = 2
    fi
  }
}

/* ------------------------------------------------------------------------------------------------
 * GET of t when the store lacks it: import (imports.EngineImporter) under the claim of t's schema.
 */
proctype Import(byte me) {
  byte f, j, k, key, seen, res, found;
  claim();
  key = KEY(1);
  repair(false);
  atomic {
    if
    :: HELD && st[T] != 0 -> ACK(T, st[T]); res = 1   /* the store has it now: that is the answer */
    :: HELD && st[T] == 0 -> skip
    :: !HELD -> res = 2
    fi
  };
  if :: res != 0 -> goto out :: else -> skip fi;
#if defined(BUG_IMPORT) || defined(BUG_IMPORT_BARRIER)
  atomic { found = reg[T]; printf("p%d: import reads the engine (no barrier): %d\n", me, found) };
#else
  /* the load is an engine call like any other: it meets the barrier and raises it to this claim's fence */
  send(1);
  if :: res == 2 -> goto lost :: else -> skip fi;
  atomic {
    calls--;
    if
    :: STALE(k, f) -> res = 2; printf("p%d: import refused (StaleFence)\n", me)
    :: else -> RAISE(k, f); found = reg[T]; printf("p%d: import reads the engine behind fence %d: %d\n", me, f, found)
    fi; k = 0
  };
  if :: res == 2 -> goto lost :: else -> skip fi;
#endif
  atomic {
    if
    :: HELD && found == 0 -> ACK(T, 0)                      /* 404: no such table */
    :: HELD && found != 0 && st[T] == 0 -> st[T] = found; COMMITTED(T); ACK(T, found);
       printf("p%d: imported t (%d) into the store\n", me, found)
    :: HELD && st[T] != 0 -> skip
    :: !HELD -> printf("p%d: import FenceLost\n", me)
    fi
  };
  goto out;
lost:
  printf("p%d: FenceLost\n", me);
out:
  release();
  ops_done++
}

/* ------------------------------------------------------------------------------------------------
 * DROP of t under the claim of its schema: journalled when the store has t; when only the engine has
 * it, an engine-only drop (journalled too, since the fix).
 */
proctype DropTable(byte me) {
  byte f, j, k, key, seen, res, kind;
  claim();
  key = KEY(1);
  repair(false);
  atomic {
    if
    :: HELD && st[T] != 0 -> kind = DROP; in_open[me] = true; in_kind[me] = DROP; in_obj[me] = T;
       in_inc[me] = st[T]; in_key[me] = key; printf("p%d: intent: drop t (%d)\n", me, st[T])
    :: HELD && st[T] == 0 -> kind = EDROP
    :: !HELD -> res = 2
    fi
  };
  if :: res == 2 -> goto lost :: else -> skip fi;
  if
  :: kind == EDROP ->
     atomic { seen = (reg[T] != 0) };                       /* does the engine list t? */
     if
     :: !seen -> atomic { if :: HELD -> ACK(T, 0) :: else -> skip fi }; goto out   /* dropped: false */
     :: else -> skip
     fi;
#if !defined(BUG_IMPORT) && !defined(BUG_IMPORT_INTENT)
     atomic {
       if
       :: HELD -> in_open[me] = true; in_kind[me] = EDROP; in_obj[me] = T; in_key[me] = key;
          printf("p%d: intent: engine-only drop of t\n", me)
       :: else -> res = 2
       fi
     };
     if :: res == 2 -> goto lost :: else -> skip fi;
#endif
     skip
  :: else -> skip
  fi;
  send(1);
  if :: res == 2 -> goto refused :: else -> skip fi;
  atomic {
    calls--;
    if
    :: STALE(k, f) -> res = 2; printf("p%d: drop refused (StaleFence)\n", me)
    :: else -> RAISE(k, f); res = 1; reg[T] = 0;
       printf("p%d: engine dropped t (fence %d, key %d)\n", me, f, k)
    fi; k = 0
  };
  if :: res == 2 -> goto refused :: else -> skip fi;
  /* the store step: apply and end the intent, one guarded transaction */
  atomic {
    if
    :: HELD -> if :: kind == DROP -> st[T] = 0 :: else -> skip fi; in_open[me] = false; COMMITTED(T); ACK(T, 0);
       printf("p%d: store step: t dropped, acknowledged\n", me)
    :: else -> printf("p%d: store step FenceLost: outcome unknown, intent left\n", me)
    fi
  };
  goto out;
refused:  /* nothing was changed: withdraw the intent (no claim needed); FenceLost */
  atomic { in_open[me] = false; printf("p%d: withdrawn\n", me) };
  goto out;
lost:
  printf("p%d: FenceLost\n", me);
out:
  release();
  ops_done++
}

/* ------------------------------------------------------------------------------------------------
 * Rename of the catalog (a store change under a claim on the metalake). With BUG_PATH_KEY, the open
 * intents are relabelled to the new path in the same transaction (journal.following_rename) and their
 * fence key with it.
 */
proctype RenameCatalog(byte me) {
  byte f, j;
  claim();
  atomic {
    if
    :: HELD -> catname = 1 - catname;
#ifdef BUG_PATH_KEY
       j = 1;
       do
       :: j <= NOPS -> if :: in_open[j] -> in_key[j] = catname * 2 + in_key[j] % 2 :: else -> skip fi; j++
       :: else -> j = 0; break
       od;
#endif
       printf("p%d: catalog renamed to %d\n", me, catname)
    :: else -> skip
    fi
  };
  release();
  ops_done++
}

/* `gravimeta repair`: every open intent, under one claim. */
proctype Repairer(byte me) {
  byte f, j, key, seen;
  claim();
  repair(true);
lost:
  release();
  ops_done++
}

/* ------------------------------------------------------------------------------------------------
 * DROP of schema s (the sqlite connector's drop_schema): the fenced transaction deletes the registry
 * row and renames the incarnation's file to a tombstone; then, outside it, the tombstone is unlinked.
 * With BUG_UNLINK the file is named after s and the unlink removes whatever file has that name.
 */
proctype DropSchema(byte me) {
  byte f, j, k, key, seen, res, gone;
  claim();
  key = KEY(0);
  repair(false);
  atomic {
    if
    :: HELD && st[S] != 0 -> in_open[me] = true; in_kind[me] = DROP; in_obj[me] = S; in_inc[me] = st[S];
       in_key[me] = key; printf("p%d: intent: drop s (%d)\n", me, st[S])
    :: HELD && st[S] == 0 -> res = 3
    :: !HELD -> res = 2
    fi
  };
  if :: res == 2 -> goto lost :: res == 3 -> goto out :: else -> skip fi;
  send(0);
  if :: res == 2 -> goto refused :: else -> skip fi;
  atomic {
    if
    :: STALE(k, f) -> calls--; res = 2; printf("p%d: schema drop refused (StaleFence)\n", me)
    :: !STALE(k, f) && reg[S] == 0 -> calls--; RAISE(k, f); res = 1     /* nothing to drop */
    :: !STALE(k, f) && reg[S] != 0 -> RAISE(k, f); res = 1; gone = reg[S]; reg[S] = 0;
#ifndef BUG_UNLINK
       files = files & ~(1 << gone); tombs = tombs | (1 << gone);
#endif
       printf("p%d: engine dropped s (%d), fence %d\n", me, gone, f)
    fi; k = 0
  };
  if :: res == 2 -> goto refused :: else -> skip fi;
  if
  :: gone != 0 ->
     atomic {
#ifdef BUG_UNLINK
       fname = 0;
#else
       tombs = tombs & ~(1 << gone);
#endif
       calls--; printf("p%d: unlinked the file of s (%d)\n", me, gone)
     }
  :: else -> skip
  fi;
  atomic {
    if
    :: HELD -> st[S] = 0; in_open[me] = false; COMMITTED(S); ACK(S, 0); printf("p%d: store step: s dropped\n", me)
    :: else -> printf("p%d: store step FenceLost: outcome unknown, intent left\n", me)
    fi
  };
  goto out;
refused:
  atomic { in_open[me] = false; printf("p%d: withdrawn\n", me) };
  goto out;
lost:
  printf("p%d: FenceLost\n", me);
out:
  release();
  ops_done++
}

/* CREATE of schema s, incarnation `inc` (create_schema: registry row and the incarnation's file in
 * one fenced transaction; with BUG_UNLINK the file named after s, an orphan of that name removed first). */
proctype CreateSchema(byte me; byte inc) {
  byte f, j, k, key, seen, res;
  claim();
  key = KEY(0);
  repair(false);
  atomic {
    if
    :: HELD && st[S] == 0 -> in_open[me] = true; in_kind[me] = CREATE; in_obj[me] = S; in_inc[me] = inc;
       in_key[me] = key; printf("p%d: intent: create s (%d)\n", me, inc)
    :: HELD && st[S] != 0 -> res = 3   /* SchemaAlreadyExists */
    :: !HELD -> res = 2
    fi
  };
  if :: res == 2 -> goto lost :: res == 3 -> goto out :: else -> skip fi;
  send(0);
  if :: res == 2 -> goto refused :: else -> skip fi;
  atomic {
    calls--;
    if
    :: STALE(k, f) -> res = 2; printf("p%d: schema create refused (StaleFence)\n", me)
    :: !STALE(k, f) && reg[S] != 0 -> RAISE(k, f); res = 1           /* there already (empty): accepted */
    :: !STALE(k, f) && reg[S] == 0 -> RAISE(k, f); res = 1; reg[S] = inc;
#ifdef BUG_UNLINK
       fname = inc;
#else
       files = files | (1 << inc);
#endif
       printf("p%d: engine created s (%d), fence %d\n", me, inc, f)
    fi; k = 0
  };
  if :: res == 2 -> goto refused :: else -> skip fi;
  atomic {
    if
    :: HELD -> st[S] = inc; in_open[me] = false; COMMITTED(S); ACK(S, inc); printf("p%d: store step: s created\n", me)
    :: else -> printf("p%d: store step FenceLost: outcome unknown, intent left\n", me)
    fi
  };
  goto out;
refused:
  atomic { in_open[me] = false; printf("p%d: withdrawn\n", me) };
  goto out;
lost:
  printf("p%d: FenceLost\n", me);
out:
  release();
  ops_done++
}

/* The last repair run, once every operation is over, under a claim that lasts (the clock has stopped). */
proctype Final(byte nops) {
  byte me = FINAL;
  byte f, j, key, seen;
  (ops_done == nops);
  claim();
  repair(true);
lost:
  release();
  final_done = true
}

/* The database clock: the live claim may expire at any moment (while operations run). */
proctype Clock(byte nops) {
end:
  do
  :: atomic { cl_live && ops_done < nops -> cl_live = false; printf("clock: the claim of p%d (fence %d) expires\n", cl_holder, cl_fence) }
  od
}

/* Properties 1 and 2, checked in every state (the statement is enabled only in a violating state). */
proctype Monitor() {
end:
  do
  :: atomic { (!ANY_OPEN && calls == 0 && !(AGREE(T) && AGREE(S))) ->
       printf("store t %d s %d, engine t %d s %d\n", st[T], st[S], ENG(T), ENG(S));
       assert(false) }   /* property 1: every intent settled, store and engine differ */
  :: atomic { (acked[T] && !OPEN_ON(T) && (st[T] != ack[T] || ENG(T) != ack[T])) ->
       printf("t: told %d, store %d, engine %d\n", ack[T], st[T], ENG(T));
       assert(false) }   /* property 2: an acknowledged change of t is lost */
  :: atomic { (acked[S] && !OPEN_ON(S) && (st[S] != ack[S] || ENG(S) != ack[S])) ->
       printf("s: told %d, store %d, engine %d\n", ack[S], st[S], ENG(S));
       assert(false) }   /* property 2 for s */
  od
}

init {
  byte nops;
  atomic {
#ifdef SCHEMAS
    st[S] = 1; reg[S] = 1;
#ifdef BUG_UNLINK
    fname = 1;
#else
    files = 2;
#endif
    ACK(S, 1);
    run DropSchema(1);
    run CreateSchema(2, 2);
    run RenameCatalog(3);
    nops = 3;
#elif defined(RENAME)
    st[T] = 1; reg[T] = 1; ACK(T, 1);
    run DropTable(1);
    run RenameCatalog(2);
    run Repairer(3);
    nops = 3;
#else
    reg[T] = EXT;                 /* made in the engine outside gravimeta */
    run Import(1);
    run DropTable(2);
    run RenameCatalog(3);
#ifdef REPAIRER
    run Repairer(4);
    nops = 4;
#else
    nops = 3;
#endif
#endif
    run Clock(nops);
    run Monitor();
    run Final(nops)
  };
  (final_done && calls == 0);
  atomic {
    printf("end: store t %d s %d, engine t %d s %d\n", st[T], st[S], ENG(T), ENG(S));
    assert(!ANY_OPEN);            /* property 3: the last repair settled every intent */
    assert(AGREE(T) && AGREE(S))
  }
}
