/* calc lexer: splits an expression into numbers, names and one-character operators. */
#include "calc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void calc_lexer_init(struct calc_lexer *lx, const char *src)
{
	lx->src = src;
	lx->pos = 0;
}

void calc_lexer_next(struct calc_lexer *lx, struct calc_token *out)
{
	const char *s = lx->src;
	while (s[lx->pos] == ' ' || s[lx->pos] == '\t' || s[lx->pos] == '\n')
		lx->pos++;
	memset(out, 0, sizeof(*out));
	out->pos = lx->pos;
	unsigned char c = (unsigned char)s[lx->pos];
	if (!c) {
		out->kind = CALC_TOK_END;
		return;
	}
	if (isdigit(c) || (c == '.' && isdigit((unsigned char)s[lx->pos + 1]))) {
		char *end;
		out->kind = CALC_TOK_NUM;
		out->num = strtod(s + lx->pos, &end);
		out->len = (size_t)(end - (s + lx->pos));
		lx->pos += out->len;
		return;
	}
	if (isalpha(c) || c == '_') {
		size_t n = 0;
		while (isalnum((unsigned char)s[lx->pos + n]) || s[lx->pos + n] == '_')
			n++;
		out->kind = CALC_TOK_IDENT;
		out->len = n;
		lx->pos += n;
		return;
	}
	out->len = 1;
	lx->pos++;
	if (strchr("+-*/%^(),", c)) {
		out->kind = CALC_TOK_OP;
		out->op = (char)c;
	} else {
		out->kind = CALC_TOK_ERROR;
	}
}
