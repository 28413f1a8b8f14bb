/*
 * The cross-replica claim protocol of gravimeta (LEASE_TABLE, and the advisory guard of PG_ADVISORY /
 * AUTO) at the grain of SQL statements, for spin. docs/claim-model.md says what it covers, how to run
 * it and where it differs from the code; tests/model/test_claim_model.py runs it.
 *
 * Configurations (spin -a -D...): which claimants run, on which paths
 *   (none)          three lease replicas on /m/c/s, /m and /m/c (each with its heartbeat's renewals),
 *                   the reclaimer and the clock (too large to check whole: use RENEWERS or
 *                   MAXRECLAIM=0); NREQ=2 leaves /m/c out
 *   SAME_PATH       two lease replicas, both on /m/c/s
 *   MIXED           two lease replicas (/m/c/s, /m/c) and one advisory claimant (the PG_ADVISORY/AUTO
 *                   guard) on /m; the lease claim also try-locks the advisory keys (advisory_plan)
 *   SIBLINGS        lease replicas on /m/c/s and /m/c/t (unrelated: both may hold at once) and /m/c
 *   ROOT            lease replicas on / (a root claim), /m/c/s and /m2 (another metalake); the root
 *                   claim locks its related rows NOWAIT (a locked one: busy); ROOT_WAITS: it waits for
 *                   them, as before alembic 0020. A busy root attempt records the claim as the waiting
 *                   root claim ('/''s anchor row, alembic 0021); a claim under a metalake that reads a
 *                   live record is held back (busy); the clock may end the record at any moment
 *   ROOT_FAIR       liveness (spin -a, pan -a -f): the root claim tries until it is granted, the
 *                   claims on /m/c/s and /m2 churn forever (claim, store write, release, again); no
 *                   expiry, no heartbeat, no reclaimer. The record does not expire while its waiter
 *                   lives (the timing the code bounds); ROOT_DIES: the waiter may die after an attempt,
 *                   and the clock then ends its record. Checked: ltl root_gets_in (<> the root claim is
 *                   granted) and ltl others_go_on ([]<> another claim is granted)
 *   MAXRECLAIM=0    no reclaimer; MAXRENEW=0 no renewals; RENEWERS=n a heartbeat for the first n
 *                   lease replicas only
 * Reverted fixes and other variants:
 *   BUG_LEASE       liveness decided by a plain read, and the claim granted even when its steal DELETE
 *                   removed fewer rows than it read expired (as the code before alembic 0012)
 *   BUG_ADVISORY    gm_advisory_claim's plain EXISTS read
 *   BUG_ADVISORY_WHERE  the advisory read locks FOR SHARE, but with the expiry test in its WHERE clause,
 *                   so an expired row (whose holder may be inside its fenced store transaction) is
 *                   neither locked nor waited for
 *   ADV_KEEP_SHARE  an advisory guard that finds a live lease keeps its FOR SHARE row locks while it
 *                   sleeps (default, as gm_advisory_claim does: the block that took them is rolled back,
 *                   the advisory locks stay)
 *   BUG_ROOT_FENCE  a root claim numbers its fence from the '/' anchor alone, not the highest of every
 *                   anchor row
 *   LAST_WRITE      the holder's store transaction is its operation's last: its guard is the DELETE of
 *                   its own row (_check_fence_and_release); default: the SELECT ... FOR UPDATE guard,
 *                   then release() in a transaction of its own
 *   NO_FENCE        the fence guard does nothing (the code's test-only UNSAFE_NO_FENCE): a check that the
 *                   properties are not vacuous
 *   TIMEOUTS        any lock wait may end in a lock timeout, which rolls the statement's transaction back
 *                   (default: waits are unbounded, so spin also reports a deadlock, as an invalid end
 *                   state)
 *   NO_HOLDBACK     a busy root claim records nothing (the code's test-only root_hold_back): with
 *                   ROOT_FAIR the churn starves the root claim (root_gets_in fails)
 *   BUG_RECORD_NO_EXPIRY  the record of a waiting root claim never ends by the clock: with ROOT_FAIR
 *                   ROOT_DIES a dead waiter holds the others back forever (others_go_on fails)
 *   BUG_HELD_EARLY  a claim under a metalake reads the record before it locks '/' (a plain read): a claim
 *                   granted while a root claim's record is live (property 7; not a fix: shows it is not
 *                   vacuous)
 *
 * Paths: 0 = /, 1 = /m, 2 = /m/c, 3 = /m/c/s, 4 = /m/c/t, 5 = /m2; REL(p) is the set of paths related
 * to p (equal, ancestor or descendant): /m/c/s and /m/c/t are unrelated, /m2 is related only to /.
 * One lease row per path (scope_path is the primary key). Anchor rows (gm_claim_anchor): 0 = '/',
 * 1 = '/m', 2 = '/m2', each with the fence column. A claim under a metalake locks '/' FOR KEY SHARE and
 * its metalake's row FOR UPDATE; a root claim locks '/' FOR UPDATE (which conflicts with KEY SHARE). A
 * claim's fence is one more than the highest of the anchor rows it read ('/' and its metalake's; every
 * row for a root claim), stored in its own anchor row at its commit.
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

#define NP 6             /* paths */
#define NA 3             /* anchor rows */
#define NR 3             /* lease replicas at most */
#define ADV_CONN 7
#define RECLAIM_CONN 8
#define BIT(c) (1 << (c))

/* the paths related to p (bit mask) and p's proper ancestors (its advisory plan's shared keys) */
#define REL(p) ((p) == 0 -> 63 : ((p) <= 2 -> 31 : ((p) == 3 -> 15 : ((p) == 4 -> 23 : 33))))
#define ANC(p) ((p) == 0 -> 0 : ((p) == 1 || (p) == 5 -> 1 : ((p) == 2 -> 3 : 7)))
#define RELATED(a, b) ((REL(a) >> (b)) & 1)
/* a statement over the related rows visits the rows there are: move i to the next related row that
 * exists (a row inserted after the statement started is not in its snapshot anyway) */
#define SKIP_TO_ROW(q, i) do :: i < NP && !(RELATED(q, i) && cm[i].ex) -> i++ :: else -> break od
#define SKIP_ANC(q, i) do :: i < q && !((ANC(q) >> i) & 1) -> i++ :: else -> break od
/* the anchor row a claim on p locks FOR UPDATE */
#define ANCHOR(p) ((p) == 0 -> 0 : ((p) == 5 -> 2 : 1))

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
byte ax[NP];             /* advisory lock of each path's key: exclusive holder */
short as[NP];            /* ... and shared holders (bitmask) */

byte a_x[NA];            /* anchor rows: FOR UPDATE holder */
short root_ks;           /* '/' FOR KEY SHARE holders (bitmask) */
byte afence[NA];         /* the anchor rows' fence column, committed */
byte apd[NA];            /* ... written by the transaction holding a_x (0: not written) */

/* what each replica's request thread shares with its heartbeat thread (LeaseBackend._claims) */
bool claimed[NR + 1];
byte cl_fence[NR + 1];

/* the waiting root claim's record, in '/''s anchor row (alembic 0021): its holder, whether it is live */
byte rw;
bool rw_live;
#ifdef ROOT_FAIR
bool rq;                 /* the root claim waits for '/' FOR UPDATE: later KEY SHARE requests queue behind it */
bool rw_dead;            /* ROOT_DIES: the waiter died; its record ends by the clock */
bool root_in;            /* ghost: the root claim was granted */
bit others;              /* ghost: flips at every grant of another claim */
#define QUEUE_OK (!rq)
#else
#define QUEUE_OK 1
#endif

/* ghosts, for the properties */
byte writing;            /* paths between a passed guard and the commit of that store transaction */
bool lost[NR + 1];       /* replica r's claim row was deleted by another connection's committed statement */
byte maxf[NP];           /* the highest fence granted on each path so far */

#define LIVE(p) (cm[p].ex && cm[p].live -> 1 : 0)
#define LIVEMASK (LIVE(0) + 2 * LIVE(1) + 4 * LIVE(2) + 8 * LIVE(3) + 16 * LIVE(4) + 32 * LIVE(5))
#define ALONE(p) (!LIVE(p) || (LIVEMASK & REL(p) & ~BIT(p)) == 0)
#define NO_TWO_LIVE_RELATED (ALONE(0) && ALONE(1) && ALONE(2) && ALONE(3) && ALONE(4) && ALONE(5))
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
  i = 0;
  do
  :: i < NA ->
     if
     :: a_x[i] == me ->
        if :: apply && apd[i] != 0 -> afence[i] = apd[i] :: else -> skip fi;
        apd[i] = 0; a_x[i] = 0
     :: else -> skip
     fi;
     i++
  :: else -> break
  od;
  root_ks = root_ks & ~BIT(me);
  i = 0;
  /* never two live related claims: a row only becomes live by a commit */
  assert(!apply || NO_TWO_LIVE_RELATED)
}

/* a store write on path p between a passed guard and its commit: no related write may be in flight */
inline enter_write(p) {
  atomic { printf("c%d: guard passed, store write on %d\n", me, p); assert((writing & REL(p)) == 0); writing = writing | BIT(p) }
}
#define LEAVE_WRITE(p) writing = writing & ~BIT(p)

#define DELETE_ROW(p) dirty[p] = true; pd[p].ex = false

/* ------------------------------------------------------------------------------------------------
 * A replica's request thread: claim path q (LeaseBackend._try_claim / gm_claim_scope), then a store
 * transaction behind the fence guard, then release() (with LAST_WRITE the guard deletes the row and
 * the commit releases it).
 */
proctype Req(byte me; byte q) {
  byte i, tries, f, sn_h, sn_f, read, gone;
  bool busy, deleted, held;

claim:
#ifndef ROOT_FAIR
  tries++;
#endif
  /* 1. the anchor rows: '/' FOR KEY SHARE and the metalake's row FOR UPDATE, or '/' FOR UPDATE for a
   * root claim (KEY SHARE conflicts with FOR UPDATE only). A claim under a metalake reads the waiting
   * root claim's record in the statement that locks '/': live, it is held back (alembic 0021) */
  if
  :: q == 0 ->
#ifdef ROOT_FAIR
     rq = true;
#endif
     if
     :: atomic { a_x[0] == 0 && root_ks == 0 -> a_x[0] = me;
#ifdef ROOT_FAIR
                 rq = false
#endif
               }
     GIVE_UP(not_granted)
     fi
  :: else ->
#ifdef BUG_HELD_EARLY
     held = rw_live;   /* a plain read of the record before '/' is locked */
     if
     :: atomic { a_x[0] == 0 && QUEUE_OK -> root_ks = root_ks | BIT(me) }
     GIVE_UP(not_granted)
     fi;
#else
     if
     :: atomic { a_x[0] == 0 && QUEUE_OK -> root_ks = root_ks | BIT(me); held = rw_live }
     GIVE_UP(not_granted)
     fi;
#endif
     if :: held -> printf("c%d: held back by the waiting root claim\n", me); goto not_granted :: else -> skip fi;
     if
     :: atomic { a_x[ANCHOR(q)] == 0 -> a_x[ANCHOR(q)] = me }
     GIVE_UP(not_granted)
     fi
  fi;
#ifdef MIXED
  /* 2. the scope's advisory locks, tried (advisory_plan): ancestors shared, the scope's own exclusive */
  atomic {
    i = 0;
    do
    :: i < q && ((ANC(q) >> i) & 1) == 0 -> i++
    :: i < q && ((ANC(q) >> i) & 1) && ax[i] == 0 -> as[i] = as[i] | BIT(me); i++
    :: i < q && ((ANC(q) >> i) & 1) && ax[i] != 0 -> busy = true; break
    :: i == q && ax[q] == 0 && as[q] == 0 -> ax[q] = me; break
    :: i == q && !(ax[q] == 0 && as[q] == 0) -> busy = true; break
    od;
    i = 0
  }
  if :: busy -> goto not_granted :: else -> skip fi;
#endif
  /* 3. the related claims and whether one is live */
#ifdef BUG_LEASE
  atomic {  /* plain SELECT: one snapshot of the committed rows */
    i = 0;
    do
    :: i < NP && RELATED(q, i) && cm[i].ex ->
       if :: cm[i].live -> busy = true :: else -> read++; printf("c%d: reads %d expired (plain read)\n", me, i) fi; i++
    :: i < NP && !(RELATED(q, i) && cm[i].ex) -> i++
    :: else -> break
    od;
    i = 0
  }
#else
#ifdef ROOT_FAIR
  /* the code's plain read first: a related claim committed live answers busy at once, locking nothing
   * (its liveness matters here: a locking read of a live row would hold up its holder's release) */
  atomic { busy = ((LIVEMASK & REL(q)) != 0) };
  if :: busy -> goto not_granted :: else -> skip fi;
#endif
  /* SELECT ... FOR UPDATE: each related row is locked, liveness judged on its newest version. A root
   * claim (it holds '/' FOR UPDATE, which every other claim needs) locks them NOWAIT: a row another
   * transaction holds ends the attempt, busy, instead of a wait (alembic 0020; ROOT_WAITS: it waits) */
  atomic { i = 0; SKIP_TO_ROW(q, i) };
  do
#ifndef ROOT_WAITS
  :: i < NP && !busy && q == 0 ->
     atomic {
       if
       :: !cm[i].ex -> skip   /* deleted and committed since the statement began: not there */
       :: cm[i].ex && LOCKABLE_X(i) -> TAKE_X(i);
          if :: cm[i].live -> busy = true :: else -> read++; printf("c%d: reads %d expired (locked)\n", me, i) fi
       :: cm[i].ex && !LOCKABLE_X(i) -> busy = true; printf("c%d: %d is locked: busy (NOWAIT)\n", me, i)
       fi;
       i++; SKIP_TO_ROW(q, i)
     }
  :: i < NP && !busy && q != 0 ->
#else
  :: i < NP && !busy ->
#endif
     LOCKING_STMT(i, LOCKABLE_X, TAKE_X, cm[i].ex,
                  if :: cm[i].live -> busy = true :: else -> read++; printf("c%d: reads %d expired (locked)\n", me, i) fi; i++; SKIP_TO_ROW(q, i),
                  i++; SKIP_TO_ROW(q, i), not_granted)
  :: else -> i = 0; break
  od;
#endif
  if :: busy -> goto not_granted :: else -> skip fi;
  /* 4. the steal, as gm_claim_scope keys it: ONE statement, DELETE ... WHERE (path related) AND
   * lease_expires_at <= now, over every related row */
  atomic { i = 0; SKIP_TO_ROW(q, i) };
  do
  :: i < NP ->
     LOCKING_STMT(i, LOCKABLE_X, TAKE_X, cm[i].ex && !cm[i].live,
                  DELETE_ROW(i); gone++; i++; SKIP_TO_ROW(q, i),
                  i++; SKIP_TO_ROW(q, i), not_granted)
  :: i == NP -> i = 0; break
  od;
  printf("c%d: steal DELETE removed %d row(s) of %d read expired\n", me, gone, read);
#ifndef BUG_LEASE
  /* every row read expired has been locked by this claim since, so the steal deletes each: the code
   * has no "found expired, could not delete" check, and this assertion shows it needs none */
  assert(gone == read);
#endif
  /* 5. the next fence, above every fence of the anchor rows this claim read (a root claim: all of
   * them), written to its own anchor row, and 6. INSERT the claim row: waits for a transaction that
   * holds the row; unique violation (IntegrityError, retry) if a row is there. One step: the anchor
   * rows cannot change under this claim's locks. */
  if
  :: atomic { LOCKABLE_X(q) -> xl[q] = me;
       if
#ifdef BUG_ROOT_FENCE
       :: q == 0 -> f = afence[0] + 1
#else
       :: q == 0 -> f = (afence[1] > afence[2] -> afence[1] : afence[2]); f = (afence[0] > f -> afence[0] : f) + 1
#endif
       :: q != 0 -> f = (afence[0] > afence[ANCHOR(q)] -> afence[0] : afence[ANCHOR(q)]) + 1
       fi;
#ifdef ROOT_FAIR
       f = 1;             /* fences are not this configuration's matter, and would grow without bound */
#endif
       apd[ANCHOR(q)] = f;
       if
       :: (dirty[q] && !pd[q].ex) || (!dirty[q] && !cm[q].ex) ->
          dirty[q] = true; pd[q].ex = true; pd[q].hold = me; pd[q].fence = f; pd[q].live = true
       :: else -> busy = true
       fi }
  GIVE_UP(not_granted)
  fi;
  if :: busy -> goto not_granted :: else -> skip fi;
  /* 7. COMMIT: granted. Its fence is above every fence ever granted on a related path (the order an
   * engine relies on when it compares tokens of related scopes) */
  atomic { end_tx(true); lost[me] = false; cl_fence[me] = f; claimed[me] = true;
           printf("c%d: claim on %d granted, fence %d\n", me, q, f);
           /* 7. a recorded root claim is not overtaken: no other claim is granted while its record is live */
           assert(q == 0 || !rw_live);
           if :: q == 0 && rw == me -> rw_live = false :: else -> skip fi;   /* the grant ends its record */
#ifdef ROOT_FAIR
           if :: q == 0 -> root_in = true :: else -> others = 1 - others fi;
#else
           i = 0;
           do
           :: i < NP -> assert(!RELATED(q, i) || maxf[i] < f); i++
           :: else -> i = 0; break
           od;
           maxf[q] = f;
#endif
           read = 0; gone = 0 };
  goto store;

not_granted:
  atomic {
    printf("c%d: claim on %d not granted\n", me, q);
#ifndef NO_HOLDBACK
    /* a busy root attempt (not a lock timeout) records the claim as the waiting root claim, in its
     * transaction, which holds '/' FOR UPDATE (gm_root_wait): renews its own record, or starts one when
     * none is live (the rest between records is timing: not modelled) */
    if
    :: q == 0 && busy && a_x[0] == me && (rw == me || !rw_live) ->
       rw = me; rw_live = true; printf("c%d: recorded as the waiting root claim\n", me)
    :: else -> skip
    fi;
#endif
    end_tx(false);
    busy = false; held = false; f = 0; i = 0; read = 0; gone = 0
  };
#ifdef ROOT_FAIR
#ifdef ROOT_DIES
  if :: q == 0 && rw == me -> rw_dead = true; printf("c%d: the waiting root claim dies\n", me); goto done :: true -> skip fi;
#endif
  goto claim;   /* ROOT_FAIR: try until granted */
#endif
  if :: tries < MAXTRY -> goto claim :: else -> goto done fi;   /* ScopeBusy */

store:
#ifdef NO_FENCE
  /* UNSAFE_NO_FENCE: the guard does nothing */
  enter_write(q);
  atomic { assert(!lost[me]); LEAVE_WRITE(q); claimed[me] = false };
  goto release;
#endif
#ifndef LAST_WRITE
  /* the store transaction: the fence guard SELECT ... FOR UPDATE of its own row, the write, COMMIT */
  LOCKING_STMT(q, LOCKABLE_X, TAKE_X, cm[q].ex,
               if :: cm[q].hold == me && cm[q].fence == f && cm[q].live -> skip :: else -> goto fence_lost fi,
               goto fence_lost, fence_lost);
  enter_write(q);
  atomic { assert(!lost[me]); LEAVE_WRITE(q); claimed[me] = false; end_tx(true) };
  goto release;
#else
  /* the operation's last store transaction: its guard is DELETE ... WHERE path, holder, fence AND
   * unexpired, so the commit releases the claim */
  LOCKING_STMT(q, LOCKABLE_X, TAKE_X, cm[q].ex && cm[q].hold == me && cm[q].fence == f && cm[q].live,
               DELETE_ROW(q),
               goto fence_lost, fence_lost);
  enter_write(q);
  atomic { assert(!lost[me]); LEAVE_WRITE(q); claimed[me] = false; end_tx(true) };
  goto done;
#endif

fence_lost:  /* FenceLost: the store transaction rolls back */
  atomic { printf("c%d: FenceLost\n", me); claimed[me] = false; end_tx(false) };
release:     /* release(): DELETE ... WHERE path, holder, fence, in its own transaction */
  LOCKING_STMT(q, LOCKABLE_X, TAKE_X, cm[q].ex && cm[q].hold == me && cm[q].fence == f,
               DELETE_ROW(q), skip, release_end);
release_end:
  atomic { end_tx(true); f = 0 };
#ifdef ROOT_FAIR
  if :: q != 0 -> goto claim :: else -> skip fi;   /* the others churn forever */
#endif
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

/* The reclaimer (heartbeat task, reclaimer.py): SELECT ... WHERE lease_expires_at <= now FOR UPDATE
 * SKIP LOCKED (a row another transaction holds is skipped, never waited for), then DELETE ... WHERE
 * (path, holder, fence) IN (the rows it locked), COMMIT. */
proctype Reclaimer() {
  byte me = RECLAIM_CONN;
  byte i, j, n, rows;
end:
  do
  :: n < MAXRECLAIM ->
     n++;
     j = 0;
     do
     :: j < NP ->
        atomic {
          if
          :: cm[j].ex && !cm[j].live && LOCKABLE_X(j) -> TAKE_X(j); rows = rows | BIT(j)
          :: else -> skip   /* live, absent, or locked: skipped */
          fi;
          j++
        }
     :: else -> j = 0; break
     od;
     atomic {
       /* the rows it locked are as it read them: delete each, keyed by path, holder and fence */
       j = 0;
       do
       :: j < NP -> if :: (rows >> j) & 1 -> DELETE_ROW(j); printf("reclaimer: deletes %d\n", j) :: else -> skip fi; j++
       :: else -> j = 0; break
       od;
       rows = 0;
       end_tx(true)
     }
  od
}

/* The advisory claimant (AdvisoryClaim.acquire, gm_advisory_claim) on path q, its claim transaction
 * that its store write joins: the advisory locks root first (waiting in line), then the related lease
 * rows FOR SHARE; a live one means 'leased': the row locks of that call are given back (the block that
 * took them rolls back; with ADV_KEEP_SHARE they are kept), the advisory locks stay, it sleeps and calls
 * again; then its write and COMMIT. */
proctype Advisory(byte q) {
  byte me = ADV_CONN;
  byte i, tries, sn_h, sn_f;
  bool leased;

  i = 0;
  SKIP_ANC(q, i);
  do
  :: i < q ->
     if
     :: atomic { ax[i] == 0 -> as[i] = as[i] | BIT(me); i++; SKIP_ANC(q, i) }
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
  atomic { leased = ((LIVEMASK & REL(q)) != 0) }  /* plain EXISTS (... AND unexpired) */
#else
  /* SELECT ... FOR SHARE of the related rows, in path order; live on the newest version */
  atomic { i = 0; SKIP_TO_ROW(q, i) };
  do
  :: i < NP && !leased ->
#ifdef BUG_ADVISORY_WHERE
     LOCKING_STMT(i, LOCKABLE_S, TAKE_S, cm[i].ex && cm[i].live, leased = true; i++; SKIP_TO_ROW(q, i),
                  i++; SKIP_TO_ROW(q, i), busy)
#else
     LOCKING_STMT(i, LOCKABLE_S, TAKE_S, cm[i].ex, leased = cm[i].live; i++; SKIP_TO_ROW(q, i),
                  i++; SKIP_TO_ROW(q, i), busy)
#endif
  :: else -> i = 0; break
  od;
#endif
  if
  :: leased ->
     printf("c%d: leased\n", me);
#ifndef ADV_KEEP_SHARE
     atomic { i = 0; do :: i < NP -> sh[i] = sh[i] & ~BIT(me); i++ :: else -> i = 0; break od };
#endif
     leased = false;
     if :: tries < MAXTRY + 1 -> goto check :: else -> goto busy fi
  :: else -> skip
  fi;
  enter_write(q);
  atomic { LEAVE_WRITE(q); end_tx(true) };
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
#ifdef ROOT_FAIR
#ifndef BUG_RECORD_NO_EXPIRY
  :: atomic { rw_live && rw_dead -> rw_live = false; printf("clock: the dead waiter's record ends\n") }
#endif
  :: false
#else
#ifndef BUG_RECORD_NO_EXPIRY
  :: atomic { rw_live -> rw_live = false; printf("clock: the waiting root claim's record ends\n") }
#endif
  :: atomic { cm[0].ex && cm[0].live -> cm[0].live = false; printf("clock: %d expires\n", 0) }
  :: atomic { cm[1].ex && cm[1].live -> cm[1].live = false; printf("clock: %d expires\n", 1) }
  :: atomic { cm[2].ex && cm[2].live -> cm[2].live = false; printf("clock: %d expires\n", 2) }
  :: atomic { cm[3].ex && cm[3].live -> cm[3].live = false; printf("clock: %d expires\n", 3) }
  :: atomic { cm[4].ex && cm[4].live -> cm[4].live = false; printf("clock: %d expires\n", 4) }
  :: atomic { cm[5].ex && cm[5].live -> cm[5].live = false; printf("clock: %d expires\n", 5) }
#endif
  od
}

/* paths: 0 /, 1 /m, 2 /m/c, 3 /m/c/s, 4 /m/c/t, 5 /m2 */
#ifndef RENEWERS
#define RENEWERS NR      /* how many of the lease replicas (the first ones) have a heartbeat */
#endif
#if MAXRENEW > 0
#define LEASE(r, q) run Req(r, q); if :: r <= RENEWERS -> run Renewer(r, q) :: else -> skip fi
#else
#define LEASE(r, q) run Req(r, q)
#endif

init {
  atomic {
#if defined(MIXED)
    LEASE(1, 3);                            /* /m/c/s */
    LEASE(2, 2);                            /* /m/c */
    run Advisory(1);                        /* /m */
#elif defined(SAME_PATH)
    LEASE(1, 3); LEASE(2, 3);               /* /m/c/s twice */
#elif defined(SIBLINGS)
    LEASE(1, 3); LEASE(2, 4);               /* /m/c/s and /m/c/t: unrelated */
#if NREQ > 2
    LEASE(3, 2);                            /* /m/c: related to both */
#endif
#elif defined(ROOT_FAIR)
    run Req(1, 0); run Req(2, 3); run Req(3, 5);   /* /, and the churn on /m/c/s and /m2 */
#elif defined(ROOT)
    LEASE(1, 0); LEASE(2, 3);               /* / and /m/c/s */
#if NREQ > 2
    LEASE(3, 5);                            /* /m2: another metalake */
#endif
#else
    LEASE(1, 3); LEASE(2, 1);               /* /m/c/s and /m */
#if NREQ > 2
    LEASE(3, 2);                            /* /m/c */
#endif
#endif
#if MAXRECLAIM > 0 && !defined(ROOT_FAIR)
    run Reclaimer();
#endif
    run Clock()
  }
}

#ifdef ROOT_FAIR
/* liveness, under weak fairness (pan -a -f -N ...) */
ltl root_gets_in { <> root_in }
ltl others_go_on { []<> (others == 1) && []<> (others == 0) }
#endif
