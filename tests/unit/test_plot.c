/* The run's picture: an SVG a real renderer (rsvg-convert) draws, with each
 * series present in the pixels. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plot_svg.h"

static char *slurp(FILE *f)
{
	static char buf[1 << 20];
	size_t n;

	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return buf;
}

static struct plot example(struct plot_sample *s, size_t n, double *aborts, size_t naborts)
{
	for (size_t i = 0; i < n; i++)
		s[i] = (struct plot_sample){i * 0.1, i * 40000, i * 9000};
	for (size_t i = 0; i < naborts; i++)
		aborts[i] = 0.5 + (double)i;
	return (struct plot){.title = "run <1> & \"2\"", .duration_s = 5, .samples = s, .nsamples = n,
			     .abort_s = aborts, .naborts = naborts, .has_budget = true, .budget_kib_per_abort = 40};
}

Test(plot, series_are_elements)
{
	struct plot_sample s[50];
	double aborts[5];
	struct plot p = example(s, 50, aborts, 5);
	FILE *f = tmpfile();

	cr_assert_eq(plot_svg_write(f, &p), 0);
	char *svg = slurp(f);
	cr_expect(strstr(svg, "<polyline id=\"tracked\""));
	cr_expect(strstr(svg, "<polyline id=\"aborted\""));
	cr_expect(strstr(svg, "<polyline id=\"budget\""));
	cr_expect(strstr(svg, "<g id=\"aborts\""));
	cr_expect_eq(strstr(svg, "<g id=\"legend\"") != NULL, true);
	/* One tick per abort, the title escaped. */
	char *ticks = strstr(svg, "<g id=\"aborts\"");
	int n = 0;
	for (char *l = ticks; (l = strstr(l + 1, "<line ")) && l < strstr(ticks, "</g>");)
		n++;
	cr_expect_eq(n, 5);
	cr_expect(strstr(svg, "run &lt;1&gt; &amp; &quot;2&quot;"), "%s", svg);
	fclose(f);

	p.has_budget = false;
	f = tmpfile();
	cr_assert_eq(plot_svg_write(f, &p), 0);
	cr_expect_null(strstr(slurp(f), "id=\"budget\""), "a budget line without a budget");
	fclose(f);
}

Test(plot, empty_run_still_draws)
{
	struct plot p = {.duration_s = 0};
	FILE *f = tmpfile();

	cr_assert_eq(plot_svg_write(f, &p), 0);
	char *svg = slurp(f);
	cr_expect(strstr(svg, "</svg>"));
	cr_expect_null(strstr(svg, "nan"), "%s", svg);
	cr_expect_null(strstr(svg, "inf"), "%s", svg);
	fclose(f);
}

/* rsvg-convert (librsvg) rasterises it; each series' colour is in the pixels. */
Test(plot, a_renderer_draws_every_series)
{
	struct plot_sample s[50];
	double aborts[5];
	struct plot p = example(s, 50, aborts, 5);
	char svg[] = "/tmp/sgt-plot-XXXXXX", cmd[512];
	int fd = mkstemp(svg);

	if (system("command -v rsvg-convert >/dev/null") != 0) {
		cr_assert(!getenv("CI"), "rsvg-convert is missing in CI (scripts/deps.sh installs librsvg2-bin)");
		cr_skip_test("rsvg-convert is not installed");
	}
	FILE *f = fdopen(fd, "w");
	cr_assert_eq(plot_svg_write(f, &p), 0);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "rsvg-convert -f png -o %s.png %s && python3 %s %s.png '#1f77b4' '#d62728' '#2ca02c' '#ff7f0e'", svg,
		 svg, getenv("SG_PNG_COLORS"), svg);
	FILE *out = popen(cmd, "r");
	cr_assert(out);
	char colour[16];
	unsigned long count;
	int seen = 0;
	while (fscanf(out, "%15s %lu", colour, &count) == 2) {
		cr_expect_gt(count, 100, "%s: %lu pixels", colour, count);
		seen++;
	}
	cr_expect_eq(pclose(out), 0);
	cr_expect_eq(seen, 4);
	unlink(svg);
	snprintf(cmd, sizeof(cmd), "%s.png", svg);
	unlink(cmd);
}
