// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A slow link among sibling links (see links.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "links.h"

#define P2P_KEY		0x8000000000000000ULL	/* a pair's key: no communicator's hash clash */

/* One column's part of a unit, as reported. */
struct part {
	uint64_t key;		/* communicator hash, or P2P_KEY | a << 31 | b (a < b) */
	uint64_t sig;		/* collectives: their signature; a message: its bytes */
	uint64_t x, held;
	int col;
};

/* A unit of one step. */
struct unit {
	uint64_t key;
	uint64_t kind;		/* units of one kind are siblings */
	uint64_t x;		/* its transfer */
	int mem, nmem;		/* its member columns: row->mem[mem .. mem + nmem) */
};

struct row {
	uint64_t k;
	struct unit *u;
	int nu, cu;
	int *mem;
	int nmem, cmem;
};

struct links {
	int ncols, nrows;
	int *rank;		/* each column's rank, for messages */
	int *place;		/* each column's place in the row being filled (-1: none) */
	struct row *rows;	/* a ring of nrows */
	int filled;		/* rows ended, at most nrows */
	int next;		/* the ring slot the next row ends in */
	struct part *cur;	/* the row being filled */
	int ncur, ccur;
	bool open;
	uint64_t cur_k;
};

struct links *links__new(int ncols, int rows)
{
	struct links *l = calloc(1, sizeof(*l));
	int c;

	if (!l)
		return NULL;
	l->ncols = ncols;
	l->nrows = rows > 0 ? rows : 1;
	l->rank = calloc(ncols > 0 ? ncols : 1, sizeof(*l->rank));
	l->place = calloc(ncols > 0 ? ncols : 1, sizeof(*l->place));
	l->rows = calloc(l->nrows, sizeof(*l->rows));
	if (!l->rank || !l->place || !l->rows) {
		links__free(l);
		return NULL;
	}
	for (c = 0; c < ncols; c++)
		l->rank[c] = c;
	return l;
}

void links__free(struct links *l)
{
	int i;

	if (!l)
		return;
	for (i = 0; l->rows && i < l->nrows; i++) {
		free(l->rows[i].u);
		free(l->rows[i].mem);
	}
	free(l->rows);
	free(l->rank);
	free(l->place);
	free(l->cur);
	free(l);
}

void links__set_rank(struct links *l, int col, int rank)
{
	if (l && col >= 0 && col < l->ncols)
		l->rank[col] = rank;
}

void links__begin(struct links *l, uint64_t k)
{
	if (!l)
		return;
	l->ncur = 0;
	l->open = true;
	l->cur_k = k;
	if (l->ncols)
		memset(l->place, 0xff, sizeof(*l->place) * l->ncols);
}

void links__place(struct links *l, int col, int place)
{
	if (l && col >= 0 && col < l->ncols)
		l->place[col] = place;
}

static void add_part(struct links *l, const struct part *p)
{
	struct part *n;

	if (!l || !l->open)
		return;
	if (l->ncur == l->ccur) {
		n = realloc(l->cur, sizeof(*n) * (l->ccur ? 2 * l->ccur : 64));
		if (!n) {
			l->open = false;	/* out of memory: this row is not judged */
			return;
		}
		l->cur = n;
		l->ccur = l->ccur ? 2 * l->ccur : 64;
	}
	l->cur[l->ncur++] = *p;
}

void links__coll(struct links *l, int col, uint64_t comm, uint64_t sig, uint64_t inside_ns,
		 uint64_t held_ns)
{
	struct part p = { .key = comm & ~P2P_KEY, .sig = sig, .x = inside_ns, .held = held_ns,
			  .col = col };

	if (sig && inside_ns)
		add_part(l, &p);
}

void links__p2p(struct links *l, int a, int b, uint64_t bytes, uint64_t xfer_ns)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;
	struct part p = { .key = P2P_KEY | (uint64_t)lo << 31 | (uint64_t)hi, .sig = bytes,
			  .x = xfer_ns, .col = a };

	if (a != b && a >= 0 && b >= 0)
		add_part(l, &p);
}

static int by_key_col(const void *pa, const void *pb)
{
	const struct part *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->col > b->col) - (a->col < b->col);
}

static uint64_t mix(uint64_t h, uint64_t x)
{
	return (h ^ x) * 0x100000001b3ULL + (x >> 29);
}

/* Parts of one key make a unit: a communicator's least inside less its most held, its kind
 * from its calls and members; a pair's transfers summed, its kind from its messages and the
 * places of its ends. False: no unit (a communicator seen on one column). */
static bool make_unit(const struct part *p, int n, const int *place, struct unit *u, int *mem,
		      int *nmem)
{
	uint64_t lo = UINT64_MAX, held = 0, bytes = 0, msgs = 0;
	int i;

	u->key = p[0].key;
	u->mem = *nmem;
	u->nmem = 0;
	if (p[0].key & P2P_KEY) {
		u->x = 0;
		for (i = 0; i < n; i++) {
			u->x += p[i].x;
			bytes += p[i].sig;
			msgs++;
		}
		mem[(*nmem)++] = (int)(p[0].key >> 31 & 0x7fffffff);
		mem[(*nmem)++] = (int)(p[0].key & 0x7fffffff);
		u->nmem = 2;
		u->kind = mix(mix(mix(mix(P2P_KEY, msgs), bytes), (uint64_t)place[mem[u->mem]]),
			      (uint64_t)place[mem[u->mem + 1]]);
		return true;
	}
	for (i = 0; i < n; i++) {
		lo = p[i].x < lo ? p[i].x : lo;
		held = p[i].held > held ? p[i].held : held;
		if (!i || p[i].col != p[i - 1].col)
			mem[(*nmem)++] = p[i].col;
	}
	u->nmem = *nmem - u->mem;
	if (u->nmem < 2) {	/* a name only its process knows (an MPI handle): no unit */
		*nmem = u->mem;
		return false;
	}
	u->x = lo > held ? lo - held : 0;
	u->kind = mix(mix(p[0].sig, (uint64_t)u->nmem), 0);
	return true;
}

void links__end(struct links *l)
{
	struct row *r;
	int i, e, nu = 0, nmem = 0;

	if (!l || !l->open)
		return;
	l->open = false;
	r = &l->rows[l->next];
	if (l->ncur)	/* none: cur may be NULL still */
		qsort(l->cur, l->ncur, sizeof(*l->cur), by_key_col);
	/* a unit for each key, its members at most its parts (a pair: 2) */
	if (r->cu < l->ncur || r->cmem < l->ncur + 2 * l->ncur) {
		free(r->u);
		free(r->mem);
		r->cu = l->ncur ? l->ncur : 1;
		r->cmem = 3 * r->cu;
		r->u = malloc(sizeof(*r->u) * r->cu);
		r->mem = malloc(sizeof(*r->mem) * r->cmem);
		if (!r->u || !r->mem) {
			free(r->u);
			free(r->mem);
			memset(r, 0, sizeof(*r));
			return;
		}
	}
	for (i = 0; i < l->ncur; i = e) {
		for (e = i + 1; e < l->ncur && l->cur[e].key == l->cur[i].key; e++)
			;
		nu += make_unit(&l->cur[i], e - i, l->place, &r->u[nu], r->mem, &nmem);
	}
	r->nu = nu;
	r->nmem = nmem;
	r->k = l->cur_k;
	l->next = (l->next + 1) % l->nrows;
	l->filled += l->filled < l->nrows;
}

/* A unit of a judged window: its key and kind, and where it is in each row (-1: absent). */
struct wunit {
	uint64_t kind, key;
	int row, idx;		/* the newest row it is in, and its place there */
};

static int by_kind_key(const void *pa, const void *pb)
{
	const struct wunit *a = pa, *b = pb;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->row < b->row) - (a->row > b->row);	/* newest first */
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return (a > b) - (a < b);
}

static const struct row *row_at(const struct links *l, int m, int s)
{
	return &l->rows[(l->next - m + s + l->nrows) % l->nrows];
}

/* A row's units are in key order (made from parts sorted by it). */
static const struct unit *find(const struct row *r, uint64_t key)
{
	int lo = 0, hi = r->nu, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (r->u[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nu && r->u[lo].key == key ? &r->u[lo] : NULL;
}

/* The slow unit among the siblings [ws, we) of w over m rows, or -1; its excess, the
 * threshold, its median transfer and its siblings' median. */
static int slow_sibling(const struct links *l, int m, const struct wunit *ws, int nk,
			uint64_t step_ns, int64_t *excess, uint64_t *threshold, uint64_t *mine,
			uint64_t *theirs)
{
	uint64_t *x = calloc((size_t)m * nk, sizeof(*x)), *tmp = calloc(nk, sizeof(*tmp));
	int64_t *ex = calloc((size_t)m * nk, sizeof(*ex));
	bool *ok = calloc(m, sizeof(*ok));
	uint64_t *a = calloc(m, sizeof(*a)), *b = calloc(m, sizeof(*b));
	int s, u, late = -1, n = 0;
	uint64_t med;

	if (!x || !tmp || !ex || !ok || !a || !b)
		goto out;
	for (s = 0; s < m; s++) {
		const struct row *r = row_at(l, m, s);
		const struct unit *p;

		ok[s] = true;
		for (u = 0; u < nk && ok[s]; u++) {
			p = find(r, ws[u].key);
			ok[s] = p != NULL;
			x[(size_t)s * nk + u] = p ? p->x : 0;
		}
		if (!ok[s])
			continue;
		memcpy(tmp, &x[(size_t)s * nk], sizeof(*tmp) * nk);
		qsort(tmp, nk, sizeof(*tmp), cmp_u64);
		med = tmp[(nk - 1) / 2];
		for (u = 0; u < nk; u++)
			ex[(size_t)s * nk + u] = (int64_t)x[(size_t)s * nk + u] - (int64_t)med;
		n++;
	}
	if (n < (m + 1) / 2)
		goto out;
	late = detect__late_column(ex, ok, m, nk, step_ns, excess, threshold);
	if (late < 0)
		goto out;
	for (n = 0, s = 0; s < m; s++)
		if (ok[s]) {
			a[n] = x[(size_t)s * nk + late];
			b[n++] = x[(size_t)s * nk + late] - (uint64_t)ex[(size_t)s * nk + late];
		}
	qsort(a, n, sizeof(*a), cmp_u64);
	qsort(b, n, sizeof(*b), cmp_u64);
	*mine = a[(n - 1) / 2];
	*theirs = b[(n - 1) / 2];
out:
	free(x);
	free(tmp);
	free(ex);
	free(ok);
	free(a);
	free(b);
	return late;
}

/* "ranks 3, 7, 11 and 2 more" or "ranks 2 and 3" into buf. */
static void members_text(const struct links *l, const struct row *r, const struct unit *u,
			 char *buf, size_t n)
{
	size_t len;
	int i, shown = u->nmem > 4 ? 3 : u->nmem;

	snprintf(buf, n, "rank%s", u->nmem > 1 ? "s" : "");
	for (i = 0; i < shown; i++) {
		len = strlen(buf);
		snprintf(buf + len, n - len, "%s %d", !i ? "" : i + 1 == u->nmem ? " and" : ",",
			 l->rank[r->mem[u->mem + i]]);
	}
	len = strlen(buf);
	if (shown < u->nmem)
		snprintf(buf + len, n - len, " and %d more", u->nmem - shown);
}

bool links__judge(const struct links *l, int m, uint64_t step_ns, struct verdict *v,
		  char *detail, size_t ndetail)
{
	struct wunit *w = NULL;
	const struct row *nr;
	const struct unit *best_u = NULL;
	const struct unit *u;
	int s, i, e, k, nw = 0, total = 0, late, slow = 0, *cnt = NULL, col = -1, nsib = 0;
	int64_t excess, best_ex = 0;
	uint64_t thr, mine, theirs, best_thr = 0, best_mine = 0, best_theirs = 0;
	char who[96];
	bool found = false;

	if (!l || m < 2 || m > l->filled)
		return false;
	for (s = 0; s < m; s++)
		total += row_at(l, m, s)->nu;
	nr = row_at(l, m, m - 1);
	if (!total || !(w = calloc(total, sizeof(*w))) || !(cnt = calloc(l->ncols, sizeof(*cnt))))
		goto out;
	for (s = 0; s < m; s++) {
		const struct row *r = row_at(l, m, s);

		for (i = 0; i < r->nu; i++)
			w[nw++] = (struct wunit){ .kind = r->u[i].kind, .key = r->u[i].key, .row = s,
						  .idx = i };
	}
	qsort(w, nw, sizeof(*w), by_kind_key);
	/* one entry per key (its newest), in kind order */
	for (i = 0, e = 0; i < nw; i++)
		if (!e || w[i].key != w[e - 1].key || w[i].kind != w[e - 1].kind)
			w[e++] = w[i];
	nw = e;
	for (i = 0; i < nw; i = e) {
		for (e = i + 1; e < nw && w[e].kind == w[i].kind; e++)
			;
		if (e - i < LINKS_SIBLINGS)
			continue;
		late = slow_sibling(l, m, &w[i], e - i, step_ns, &excess, &thr, &mine, &theirs);
		if (late < 0 || w[i + late].row != m - 1)
			continue;
		u = &nr->u[w[i + late].idx];
		slow++;
		for (k = 0; k < u->nmem; k++)
			cnt[nr->mem[u->mem + k]]++;
		if (excess > best_ex) {
			best_ex = excess;
			best_u = u;
			best_thr = thr;
			best_mine = mine;
			best_theirs = theirs;
			nsib = e - i - 1;
		}
	}
	if (!slow)
		goto out;
	for (i = 0; i < l->ncols; i++)
		if (cnt[i] == slow)
			col = col == -1 ? i : -2;
	members_text(l, nr, best_u, who, sizeof(who));
	v->cls = V_COMMUNICATION;
	v->rank = col >= 0 ? col : -1;
	v->skew_ns = best_ex;
	v->threshold_ns = best_thr;
	v->post_arrival_ns = best_mine;
	if (best_u->key & P2P_KEY)
		snprintf(detail, ndetail, "sends and receives between %s take %.1f ms a step, "
			 "%.1f ms more than the median of the %d other pairs with as many messages "
			 "and bytes: a slower link %s", who, best_mine / 1e6,
			 (best_mine - best_theirs) / 1e6, nsib,
			 v->rank >= 0 ? "at the rank every slower one shares" : "between them");
	else
		snprintf(detail, ndetail, "the collectives of %s take %.1f ms a step once all came, "
			 "%.1f ms more than the median of the %d other communicators with the same "
			 "calls: a slower link %s", who, best_mine / 1e6,
			 (best_mine - best_theirs) / 1e6, nsib,
			 v->rank >= 0 ? "at the rank every slower one shares" : "among them");
	found = true;
out:
	free(w);
	free(cnt);
	return found;
}
