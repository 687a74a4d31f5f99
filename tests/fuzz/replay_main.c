/* Replays a fuzz target's corpus without libFuzzer, so every CI run feeds each parser its
 * saved inputs (malformed ones included) under the normal build. Usage: fuzz_x DIR|FILE... */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	size_t cap = 1 << 16, len = 0;
	uint8_t *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (!buf)
		return 1;
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			files++;
			if (replay_file(argv[i]))
				return 1;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			files++;
			if (replay_file(path))
				return 1;
		}
		if (d)
			closedir(d);
	}
	/* A few generated inputs as well, so an empty corpus still exercises the target. */
	uint8_t junk[512];
	uint32_t x = 2463534242u;
	for (int round = 0; round < 2000; round++) {
		size_t len = (size_t)(x % sizeof(junk));
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			junk[i] = (uint8_t) " ;0123456789abcdefx\n\t:[]+-_Ax"[x % 30];
		}
		LLVMFuzzerTestOneInput(junk, len);
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
	}
	printf("replayed %d corpus files and 2000 generated inputs\n", files);
	return 0;
}
