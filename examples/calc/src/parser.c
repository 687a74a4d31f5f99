/* calc parser: recursive descent over the lexer's tokens into an expression tree.
 * Precedence, lowest first: + -, then * / %, then unary minus, then ^ (right-associative). */
#include "calc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	struct calc_lexer lx;
	struct calc_token tok; /* current token */
	char *err;
	size_t errlen;
	int failed;
	int depth;
};

#define MAX_DEPTH 200

static void advance(struct parser *p)
{
	calc_lexer_next(&p->lx, &p->tok);
}

static void fail(struct parser *p, const char *what)
{
	if (p->failed)
		return;
	p->failed = 1;
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "%s at offset %zu", what, p->tok.pos);
}

static int is_op(const struct parser *p, char op)
{
	return p->tok.kind == CALC_TOK_OP && p->tok.op == op;
}

static struct calc_node *node_new(enum calc_node_kind kind)
{
	struct calc_node *n = calloc(1, sizeof(*n));
	if (!n)
		abort();
	n->kind = kind;
	return n;
}

static struct calc_node *binop(char op, struct calc_node *a, struct calc_node *b)
{
	struct calc_node *n = node_new(CALC_BINOP);
	n->op = op;
	n->a = a;
	n->b = b;
	return n;
}

static struct calc_node *parse_expr(struct parser *p);
static struct calc_node *parse_unary(struct parser *p);

static struct calc_node *parse_atom(struct parser *p)
{
	if (p->tok.kind == CALC_TOK_NUM) {
		struct calc_node *n = node_new(CALC_NUM);
		n->num = p->tok.num;
		advance(p);
		return n;
	}
	if (p->tok.kind == CALC_TOK_IDENT) {
		if (p->tok.len >= sizeof(((struct calc_node *)0)->name)) {
			fail(p, "name too long");
			return NULL;
		}
		struct calc_node *n = node_new(CALC_VAR);
		memcpy(n->name, p->lx.src + p->tok.pos, p->tok.len);
		advance(p);
		if (!is_op(p, '('))
			return n;
		n->kind = CALC_CALL;
		advance(p);
		n->a = parse_expr(p);
		if (!p->failed && is_op(p, ',')) {
			advance(p);
			n->b = parse_expr(p);
		}
		if (!p->failed && !is_op(p, ')'))
			fail(p, "expected ')'");
		if (p->failed) {
			calc_node_free(n);
			return NULL;
		}
		advance(p);
		return n;
	}
	if (is_op(p, '(')) {
		advance(p);
		struct calc_node *n = parse_expr(p);
		if (!p->failed && !is_op(p, ')'))
			fail(p, "expected ')'");
		if (p->failed) {
			calc_node_free(n);
			return NULL;
		}
		advance(p);
		return n;
	}
	fail(p, p->tok.kind == CALC_TOK_END ? "unexpected end of input" : "unexpected token");
	return NULL;
}

static struct calc_node *parse_power(struct parser *p)
{
	struct calc_node *base = parse_atom(p);
	if (p->failed || !is_op(p, '^'))
		return base;
	advance(p);
	struct calc_node *exp = parse_unary(p);
	if (p->failed) {
		calc_node_free(base);
		return NULL;
	}
	return binop('^', base, exp);
}

static struct calc_node *parse_unary(struct parser *p)
{
	if (++p->depth > MAX_DEPTH) {
		fail(p, "expression nested too deeply");
		return NULL;
	}
	struct calc_node *n;
	if (is_op(p, '-')) {
		advance(p);
		struct calc_node *a = parse_unary(p);
		if (p->failed) {
			n = NULL;
		} else {
			n = node_new(CALC_NEG);
			n->a = a;
		}
	} else if (is_op(p, '+')) {
		advance(p);
		n = parse_unary(p);
	} else {
		n = parse_power(p);
	}
	p->depth--;
	return n;
}

static struct calc_node *parse_term(struct parser *p)
{
	struct calc_node *left = parse_unary(p);
	while (!p->failed && (is_op(p, '*') || is_op(p, '/') || is_op(p, '%'))) {
		char op = p->tok.op;
		advance(p);
		struct calc_node *right = parse_unary(p);
		if (p->failed) {
			calc_node_free(left);
			return NULL;
		}
		left = binop(op, left, right);
	}
	return left;
}

static struct calc_node *parse_expr(struct parser *p)
{
	if (++p->depth > MAX_DEPTH) {
		fail(p, "expression nested too deeply");
		return NULL;
	}
	struct calc_node *left = parse_term(p);
	while (!p->failed && (is_op(p, '+') || is_op(p, '-'))) {
		char op = p->tok.op;
		advance(p);
		struct calc_node *right = parse_term(p);
		if (p->failed) {
			calc_node_free(left);
			left = NULL;
			break;
		}
		left = binop(op, left, right);
	}
	p->depth--;
	return left;
}

struct calc_node *calc_parse(const char *src, char *err, size_t errlen)
{
	struct parser p = {.err = err, .errlen = errlen};
	if (err && errlen)
		err[0] = '\0';
	calc_lexer_init(&p.lx, src);
	advance(&p);
	struct calc_node *n = parse_expr(&p);
	if (!p.failed && p.tok.kind != CALC_TOK_END)
		fail(&p, "unexpected trailing input");
	if (p.failed) {
		calc_node_free(n);
		return NULL;
	}
	return n;
}

void calc_node_free(struct calc_node *n)
{
	if (!n)
		return;
	calc_node_free(n->a);
	calc_node_free(n->b);
	free(n);
}
