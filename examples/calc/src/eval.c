/* calc evaluator: walks an expression tree with a small table of variables and a fixed set
 * of functions (sqrt, abs, min, max, pow). */
#include "calc.h"

#include <math.h>
#include <string.h>

void calc_env_init(struct calc_env *env)
{
	memset(env, 0, sizeof(*env));
}

int calc_env_set(struct calc_env *env, const char *name, double value)
{
	if (strlen(name) >= sizeof(env->names[0]))
		return -1;
	for (size_t i = 0; i < env->n; i++) {
		if (!strcmp(env->names[i], name)) {
			env->values[i] = value;
			return 0;
		}
	}
	if (env->n == sizeof(env->values) / sizeof(env->values[0]))
		return -1;
	strcpy(env->names[env->n], name);
	env->values[env->n++] = value;
	return 0;
}

static int lookup(const struct calc_env *env, const char *name, double *out)
{
	if (!strcmp(name, "pi")) {
		*out = M_PI;
		return CALC_OK;
	}
	for (size_t i = 0; env && i < env->n; i++) {
		if (!strcmp(env->names[i], name)) {
			*out = env->values[i];
			return CALC_OK;
		}
	}
	return CALC_EUNKNOWN;
}

static int call(const struct calc_node *n, const struct calc_env *env, double *out)
{
	double x, y = 0;
	int r = calc_eval(n->a, env, &x);
	if (r == CALC_OK && n->b)
		r = calc_eval(n->b, env, &y);
	if (r != CALC_OK)
		return r;
	int two = n->b != NULL;
	if (!strcmp(n->name, "sqrt") && !two) {
		if (x < 0)
			return CALC_EDOMAIN;
		*out = sqrt(x);
	} else if (!strcmp(n->name, "abs") && !two) {
		*out = fabs(x);
	} else if (!strcmp(n->name, "min") && two) {
		*out = x < y ? x : y;
	} else if (!strcmp(n->name, "max") && two) {
		*out = x > y ? x : y;
	} else if (!strcmp(n->name, "pow") && two) {
		*out = pow(x, y);
	} else {
		return CALC_EUNKNOWN;
	}
	return CALC_OK;
}

int calc_eval(const struct calc_node *n, const struct calc_env *env, double *out)
{
	double a, b;
	int r;
	switch (n->kind) {
	case CALC_NUM:
		*out = n->num;
		return CALC_OK;
	case CALC_VAR:
		return lookup(env, n->name, out);
	case CALC_NEG:
		if ((r = calc_eval(n->a, env, &a)) != CALC_OK)
			return r;
		*out = -a;
		return CALC_OK;
	case CALC_CALL:
		return call(n, env, out);
	case CALC_BINOP:
		if ((r = calc_eval(n->a, env, &a)) != CALC_OK ||
		    (r = calc_eval(n->b, env, &b)) != CALC_OK)
			return r;
		switch (n->op) {
		case '+':
			*out = a + b;
			return CALC_OK;
		case '-':
			*out = a - b;
			return CALC_OK;
		case '*':
			*out = a * b;
			return CALC_OK;
		case '/':
			if (b == 0)
				return CALC_EDOMAIN;
			*out = a / b;
			return CALC_OK;
		case '%':
			if (b == 0)
				return CALC_EDOMAIN;
			*out = fmod(a, b);
			return CALC_OK;
		case '^':
			*out = pow(a, b);
			return CALC_OK;
		}
	}
	return CALC_ESYNTAX;
}

int calc_eval_str(const char *src, const struct calc_env *env, double *out)
{
	struct calc_node *n = calc_parse(src, NULL, 0);
	if (!n)
		return CALC_ESYNTAX;
	int r = calc_eval(n, env, out);
	calc_node_free(n);
	return r;
}
