/*
 * The cross-replica claim protocol of gravimeta (LEASE_TABLE, and the advisory guard of PG_ADVISORY /
 * AUTO) at the grain of SQL statements, for spin. docs/claim-model.md says what it covers, how to run
 * it and where it differs from the code; tests/model/test_claim_model.py runs it.
 *
 * Variants (spin -a -D...):
 *   (none)          the protocol with the fixes of issue 14 (bugs 1 and 3): lease claimants on a 3-level
 *                   path set (NREQ of them, 2 or 3), each with its heartbeat's renewals, the release, the
 *                   reclaimer and the clock
 *   SAME_PATH       the second lease replica claims /m/c/s too (the same path as the first)
 *   MIXED           two lease replicas and one advisory claimant (the PG_ADVISORY/AUTO guard) on the
 *                   same paths; the lease claim also try-locks the advisory keys (advisory_plan)
 *   BUG_LEASE       the lease fix reverted (bug 1): liveness decided by a plain read, and the claim is
 *                   granted even when its steal DELETE removed 0 rows (as the code before alembic 0012)
 *   BUG_ADVISORY    the advisory fix reverted (bug 3): gm_advisory_claim's plain EXISTS read
 *   BUG_ADVISORY_WHERE  the advisory read locks FOR SHARE, but with the expiry test in its WHERE clause,
 *                   so an expired row (whose holder may be inside its fenced store transaction) is
 *                   neither locked nor waited for
 *   ADV_DROP_SHARE  an advisory guard that finds a live lease lets go of its FOR SHARE locks before it
 *                   sleeps (default: it keeps them, as a transaction that goes on does)
 *   LAST_WRITE      the holder's store transaction is its operation's last: its guard is the DELETE of
 *                   its own row (_check_fence_and_release); default: the SELECT ... FOR UPDATE guard,
 *                   then release() in a transaction of its own
 *   NO_FENCE        the fence guard does nothing (the code's test-only UNSAFE_NO_FENCE): a check that the
 *                   properties are not vacuous
 *   TIMEOUTS        any lock wait may end in a lock timeout (issue 14 bug 2), which rolls the statement's
 *                   transaction back (default: waits are unbounded, so spin also reports a deadlock, as
 *                   an invalid end state)
 *
 * Paths: 0 = /m, 1 = /m/c, 2 = /m/c/s. Every two of them are related, and every claim locks the one
 * anchor row '/m' FOR UPDATE ('/' FOR KEY SHARE is taken by every non-root claim and never conflicts:
 * no root claim is modelled). One lease row per path (scope_path is the primary key).
 *
 * Transactions: a row has its committed version (cm) and at most one uncommitted version (pd), written
 * by the transaction that holds its write lock (xl); other transactions read cm. Row locks are held to
 * commit or rollback; a commit is one atomic step. A plain read is one atomic step on cm. A locking
 * read, UPDATE or DELETE that finds its row unlocked reads and locks it in one step; one that finds it
 * locked keeps the version its snapshot saw, waits for the lock, then re-checks the row's newest
 * committed version as PostgreSQL's EvalPlanQual does (an UPDATE is followed to its new version, a
 * deleted row is skipped) and takes the lock only if the row still matches (LOCKING_STMT).
 * Connections: the request thread of replica r is r, its heartbeat thread r + 3, the advisory
 * claimant 7, the reclaimer 8.
 */

#define NP 3             /* paths */
#define NR 3             /* lease replicas at most */
#define ADV_CONN 7
#define RECLAIM_CONN 8
#define BIT(c) (1 << (c))

#ifndef NREQ
#define NREQ 3           /* lease replicas in the default configuration (2 or 3) */
#endif
#ifndef MAXTRY
#define MAXTRY 1         /* claim attempts of one request (then ScopeBusy) */
#endif
#ifndef MAXRENEW
#define MAXRENEW 1       /* renewals per claim */
#endif
#ifndef MAXRECLAIM
#define MAXRECLAIM 1     /* reclaimer passes */
#endif

#ifdef TIMEOUTS
#define GIVE_UP(label) :: goto label   /* the wait ended by lock_timeout: the transaction rolls back */
#else
#define GIVE_UP(label)
#endif

typedef Row { bool ex; byte hold; byte fence; bool live };

Row cm[NP];              /* committed version of the lease row of each path */
Row pd[NP];              /* the version written by the transaction holding xl[p] (when dirty[p]) */
bool dirty[NP];
byte xl[NP];             /* FOR UPDATE / write lock holder (connection), 0: none */
short sh[NP];            /* FOR SHARE holders (bitmask of connections) */
byte anchor;             /* holder of the anchor row '/m' FOR UPDATE */
byte ax[NP];             /* advisory lock of each path's key: exclusive holder */
short as[NP];            /* ... and shared holders (bitmask) */
byte fctr[NP];           /* gm_scope_fence, committed (only written under the anchor) */

/* what each replica's request thread shares with its heartbeat thread (LeaseBackend._claims) */
bool claimed[NR + 1];
byte cl_fence[NR + 1];

/* ghosts, for the properties */
short writing;           /* connections between a passed guard and the commit of that store transaction */
bool lost[NR + 1];       /* replica r's claim row was deleted by another connection's committed statement */

#define LIVE(p) (cm[p].ex && cm[p].live -> 1 : 0)
#define LOCKABLE_X(p) ((xl[p] == 0 || xl[p] == me) && (sh[p] & ~BIT(me)) == 0)
#define TAKE_X(p) xl[p] = me
#define LOCKABLE_S(p) (xl[p] == 0 || xl[p] == me)
#define TAKE_S(p) sh[p] = sh[p] | BIT(me)
#define SAME_VERSION(p) (cm[p].ex && cm[p].hold == sn_h && cm[p].fence == sn_f)

/* One statement on row p that locks the row it matches: WHERE is its condition on cm[p] (for its
 * snapshot, and again for the row's newest version after a wait); HIT runs with the lock taken, MISS
 * when the row does not match (no lock). A wait may time out to GONE (with TIMEOUTS). */
#define LOCKING_STMT(p, LOCKABLE, TAKE, WHERE, HIT, MISS, GONE) \
  if \
  :: atomic { !(WHERE) -> MISS } \
  :: atomic { (WHERE) && LOCKABLE(p) -> TAKE(p); HIT } \
  :: atomic { (WHERE) && !LOCKABLE(p) -> sn_h = cm[p].hold; sn_f = cm[p].fence } \
     if \
     :: atomic { LOCKABLE(p) -> \
          if \
          :: SAME_VERSION(p) && (WHERE) -> sn_h = 0; sn_f = 0; TAKE(p); HIT \
          :: else -> sn_h = 0; sn_f = 0; MISS \
          fi } \
     GIVE_UP(GONE) \
     fi \
  fi

/* end the transaction of connection `me`: apply (commit) or discard (rollback) what it wrote, let go
 * of its row, anchor and advisory locks */
inline end_tx(apply) {
  i = 0;
  do
  :: i < NP ->
     if
     :: xl[i] == me ->
        if
        :: dirty[i] && apply ->
           if
           :: cm[i].ex && cm[i].hold != me && (!pd[i].ex || pd[i].fence != cm[i].fence) ->
              lost[cm[i].hold] = true
           :: else -> skip
           fi;
           cm[i].ex = pd[i].ex; cm[i].hold = pd[i].hold; cm[i].fence = pd[i].fence; cm[i].live = pd[i].live
        :: else -> skip
        fi;
        dirty[i] = false; pd[i].ex = false; pd[i].hold = 0; pd[i].fence = 0; pd[i].live = false;
        xl[i] = 0
     :: else -> skip
     fi;
     sh[i] = sh[i] & ~BIT(me);
     if :: ax[i] == me -> ax[i] = 0 :: else -> skip fi;
     as[i] = as[i] & ~BIT(me);
     i++
  :: else -> break
  od;
  if :: anchor == me -> anchor = 0 :: else -> skip fi;
  i = 0;
  /* never two live related claims (here every two are related): a row only becomes live by a commit */
  assert(!apply || LIVE(0) + LIVE(1) + LIVE(2) <= 1)
}

/* a store write between a passed guard and its commit: no other related write may be in flight */
inline enter_write() {
  atomic { printf("c%d: guard passed, store write\n", me); assert((writing & ~BIT(me)) == 0); writing = writing | BIT(me) }
}

#define DELETE_ROW(p) dirty[p] = true; pd[p].ex = false

/* ------------------------------------------------------------------------------------------------
 * A replica's request thread: claim path q (LeaseBackend._try_claim / gm_claim_scope), then a store
 * transaction behind the fence guard, then release() (with LAST_WRITE the guard deletes the row and
 * the commit releases it).
 */
proctype Req(byte me; byte q) {
  byte i, tries, f, sn_h, sn_f;
  bool busy, deleted, steal[NP];

claim:
  tries++;
  /* 1. the anchor row '/m' FOR UPDATE */
  if
  :: atomic { anchor == 0 -> anchor = me }
  GIVE_UP(not_granted)
  fi;
#ifdef MIXED
  /* 2. the scope's advisory locks, tried (advisory_plan): ancestors shared, the scope's own exclusive */
  atomic {
    i = 0;
    do
    :: i < q && ax[i] == 0 -> as[i] = as[i] | BIT(me); i++
    :: i < q && ax[i] != 0 -> busy = true; break
    :: i == q && ax[q] == 0 && as[q] == 0 -> ax[q] = me; break
    :: i == q && !(ax[q] == 0 && as[q] == 0) -> busy = true; break
    od;
    i = 0
  }
  if :: busy -> goto not_granted :: else -> skip fi;
#endif
  /* 3. the related claims (here every path is related) and whether one is live */
#ifdef BUG_LEASE
  atomic {  /* plain SELECT: one snapshot of the committed rows */
    i = 0;
    do
    :: i < NP -> steal[i] = cm[i].ex && !cm[i].live; busy = busy || cm[i].ex && cm[i].live;
       if :: steal[i] -> printf("c%d: reads %d expired (plain read)\n", me, i) :: else -> skip fi; i++
    :: else -> break
    od;
    i = 0
  }
#else
  i = 0;    /* SELECT ... FOR UPDATE: each related row is locked, liveness judged on its newest version */
  do
  :: i < NP && !busy ->
     LOCKING_STMT(i, LOCKABLE_X, TAKE_X, cm[i].ex,
                  if :: cm[i].live -> busy = true :: else -> steal[i] = true; printf("c%d: reads %d expired (locked)\n", me, i) fi; i++,
                  i++, not_granted)
  :: else -> i = 0; break
  od;
#endif
  if :: busy -> goto not_granted :: else -> skip fi;
  /* 4. the steal: DELETE ... WHERE path, holder, fence AND lease_expires_at <= now, for each expired row read */
  i = 0;
  do
  :: i < NP && !steal[i] -> i++
  :: i < NP && steal[i] ->
     deleted = false;
     LOCKING_STMT(i, LOCKABLE_X, TAKE_X, cm[i].ex && !cm[i].live,
                  DELETE_ROW(i); deleted = true,
                  skip, not_granted);
     printf("c%d: steal DELETE of %d removed %d row(s)\n", me, i, deleted);
#ifndef BUG_LEASE
     /* the row has been locked by this claim since its locking read, so the steal always deletes it: the
      * code has no "found expired, could not delete" check, and this assertion shows it needs none */
     assert(deleted);
#endif
     steal[i] = false; deleted = false;
     i++
  :: i == NP -> i = 0; break
  od;
  /* 5. the next fence of q (gm_scope_fence: only ever written under the anchor, so one step with the
   * insert) and 6. INSERT the claim row: waits for a transaction that holds the row; unique
   * violation (IntegrityError, retry) if a row is there */
  if
  :: atomic { LOCKABLE_X(q) -> xl[q] = me; f = fctr[q] + 1;
       if
       :: (dirty[q] && !pd[q].ex) || (!dirty[q] && !cm[q].ex) ->
          dirty[q] = true; pd[q].ex = true; pd[q].hold = me; pd[q].fence = f; pd[q].live = true
       :: else -> busy = true
       fi }
  GIVE_UP(not_granted)
  fi;
  if :: busy -> goto not_granted :: else -> skip fi;
  /* 7. COMMIT: granted */
  atomic { end_tx(true); fctr[q] = f; lost[me] = false; cl_fence[me] = f; claimed[me] = true;
           printf("c%d: claim on %d granted, fence %d\n", me, q, f) };
  goto store;

not_granted:
  atomic {
    printf("c%d: claim on %d not granted\n", me, q);
    end_tx(false);
    busy = false; f = 0; i = 0; do :: i < NP -> steal[i] = false; i++ :: else -> i = 0; break od
  };
  if :: tries < MAXTRY -> goto claim :: else -> goto done fi;   /* ScopeBusy */

store:
#ifdef NO_FENCE
  /* UNSAFE_NO_FENCE: the guard does nothing */
  enter_write();
  atomic { assert(!lost[me]); writing = writing & ~BIT(me); claimed[me] = false };
  goto release;
#endif
#ifndef LAST_WRITE
  /* the store transaction: the fence guard SELECT ... FOR UPDATE of its own row, the write, COMMIT */
  LOCKING_STMT(q, LOCKABLE_X, TAKE_X, cm[q].ex,
               if :: cm[q].hold == me && cm[q].fence == f && cm[q].live -> skip :: else -> goto fence_lost fi,
               goto fence_lost, fence_lost);
  enter_write();
  atomic { assert(!lost[me]); writing = writing & ~BIT(me); claimed[me] = false; end_tx(true) };
  goto release;
#else
  /* the operation's last store transaction: its guard is DELETE ... WHERE path, holder, fence AND
   * unexpired, so the commit releases the claim */
  LOCKING_STMT(q, LOCKABLE_X, TAKE_X, cm[q].ex && cm[q].hold == me && cm[q].fence == f && cm[q].live,
               DELETE_ROW(q),
               goto fence_lost, fence_lost);
  enter_write();
  atomic { assert(!lost[me]); writing = writing & ~BIT(me); claimed[me] = false; end_tx(true) };
  goto done;
#endif

fence_lost:  /* FenceLost: the store transaction rolls back */
  atomic { printf("c%d: FenceLost\n", me); claimed[me] = false; end_tx(false) };
release:     /* release(): DELETE ... WHERE path, holder, fence, in its own transaction */
  LOCKING_STMT(q, LOCKABLE_X, TAKE_X, cm[q].ex && cm[q].hold == me && cm[q].fence == f,
               DELETE_ROW(q), skip, release_end);
release_end:
  atomic { end_tx(true); f = 0 };
done:
  skip
}

/* A replica's heartbeat thread: renew_all, UPDATE ... SET expiry = now + ttl WHERE path, holder,
 * fence AND unexpired, then COMMIT as a separate step (renew.before_commit). */
proctype Renewer(byte r; byte q) {
  byte me = r + NR;
  byte i, n, f, sn_h, sn_f;
end:
  do
  :: atomic { claimed[r] && n < MAXRENEW -> n++; f = cl_fence[r] };
     LOCKING_STMT(q, LOCKABLE_X, TAKE_X, cm[q].ex && cm[q].hold == r && cm[q].fence == f && cm[q].live,
                  dirty[q] = true; pd[q].ex = true; pd[q].hold = r; pd[q].fence = f; pd[q].live = true;
                  printf("c%d: renewal UPDATE of %d (not committed)\n", me, q),
                  skip, renew_commit);
renew_commit:
     atomic { printf("c%d: renewal COMMIT\n", me); end_tx(true); f = 0 }
  od
}

/* The reclaimer (heartbeat task): DELETE ... WHERE lease_expires_at <= now, over every row, COMMIT. */
proctype Reclaimer() {
  byte me = RECLAIM_CONN;
  byte i, j, n, sn_h, sn_f;
end:
  do
  :: n < MAXRECLAIM ->
     n++;
     j = 0;
     do
     :: j < NP ->
        LOCKING_STMT(j, LOCKABLE_X, TAKE_X, cm[j].ex && !cm[j].live, DELETE_ROW(j); j++, j++, reclaim_abort)
     :: else -> j = 0; break
     od;
     atomic { end_tx(true) }
  od;
reclaim_abort:  /* lock timeout: the statement fails, its transaction rolls back */
  atomic { end_tx(false) }
}

/* The advisory claimant (AdvisoryClaim._lock, gm_advisory_claim) on path q, inside its store
 * transaction: the advisory locks root first (waiting in line), then the related lease rows; while a
 * live one exists it sleeps and calls again, keeping what it holds; then its write and COMMIT. */
proctype Advisory(byte q) {
  byte me = ADV_CONN;
  byte i, tries, sn_h, sn_f;
  bool leased;

  i = 0;
  do
  :: i < q ->
     if
     :: atomic { ax[i] == 0 -> as[i] = as[i] | BIT(me); i++ }
     GIVE_UP(busy)
     fi
  :: i == q -> i = 0; break
  od;
  if
  :: atomic { ax[q] == 0 && (as[q] & ~BIT(me)) == 0 -> ax[q] = me }
  GIVE_UP(busy)
  fi;
check:
  tries++;
#ifdef BUG_ADVISORY
  atomic { leased = (LIVE(0) + LIVE(1) + LIVE(2) > 0) }  /* plain EXISTS (... AND unexpired) */
#else
  i = 0;    /* SELECT ... FOR SHARE of the related rows; live on the newest version */
  do
  :: i < NP && !leased ->
#ifdef BUG_ADVISORY_WHERE
     LOCKING_STMT(i, LOCKABLE_S, TAKE_S, cm[i].ex && cm[i].live, leased = true; i++, i++, busy)
#else
     LOCKING_STMT(i, LOCKABLE_S, TAKE_S, cm[i].ex, leased = cm[i].live; i++, i++, busy)
#endif
  :: else -> i = 0; break
  od;
#endif
  if
  :: leased ->
#ifdef ADV_DROP_SHARE
     atomic { i = 0; do :: i < NP -> sh[i] = sh[i] & ~BIT(me); i++ :: else -> i = 0; break od };
#endif
     leased = false;
     if :: tries < MAXTRY + 1 -> goto check :: else -> goto busy fi
  :: else -> skip
  fi;
  enter_write();
  atomic { writing = writing & ~BIT(me); end_tx(true) };
  goto done;
busy:   /* ScopeBusy: the store transaction rolls back */
  atomic { end_tx(false) };
done:
  skip
}

/* The database clock: any unexpired committed row may expire at any moment. (An uncommitted version
 * that would expire before its commit is the same as one that expires right after it.) */
proctype Clock() {
end:
  do
  :: atomic { cm[0].ex && cm[0].live -> cm[0].live = false; printf("clock: %d expires\n", 0) }
  :: atomic { cm[1].ex && cm[1].live -> cm[1].live = false; printf("clock: %d expires\n", 1) }
  :: atomic { cm[2].ex && cm[2].live -> cm[2].live = false; printf("clock: %d expires\n", 2) }
  od
}

init {
  atomic {
#ifdef MIXED
    run Req(1, 2); run Renewer(1, 2);       /* /m/c/s */
    run Req(2, 1); run Renewer(2, 1);       /* /m/c */
    run Advisory(0);                        /* /m */
#else
    run Req(1, 2); run Renewer(1, 2);       /* /m/c/s */
#ifdef SAME_PATH
    run Req(2, 2); run Renewer(2, 2);       /* /m/c/s as well */
#else
    run Req(2, 0); run Renewer(2, 0);       /* /m */
#endif
#if NREQ > 2
    run Req(3, 1); run Renewer(3, 1);       /* /m/c */
#endif
#endif
    run Reclaimer();
    run Clock()
  }
}
