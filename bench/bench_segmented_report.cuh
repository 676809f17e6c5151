/*
 * gridsync-bench-segmented's report and its self-test, included by bench_segmented.cu after
 * its Bench: the table of every row, the summary against bench/README.md's targets and the
 * exact sums against the default, and --selftest-summary (made-up timings through that
 * code, and the checking code on host data, no GPU).
 */

std::string Bench::table() const
{
    std::string s = strf("\n%-9s %-9s %-17s %10s %9s %10s %10s %10s %8s %8s  %s\n", "layout", "impl", "backend", "n",
                         "segments", "median_us", "min_us", "max_us", "GB/s", "x CUB", "check");
    for (const Result &r : results) {
        auto num = [](double v, const char *fmt) { return std::isfinite(v) ? strf(fmt, v) : std::string("-"); };
        s += strf("%-9s %-9s %-17s %10" PRIu64 " %9" PRIu64 " %10s %10s %10s %8s %8s  %s\n", layout_name[r.layout],
                  r.impl.c_str(), r.backend.c_str(), r.n, r.nseg, num(r.med, "%.2f").c_str(),
                  num(r.lo, "%.2f").c_str(), num(r.hi, "%.2f").c_str(), num(r.gbps, "%.1f").c_str(),
                  num(r.ratio, "%.3f").c_str(), r.check.substr(0, 60).c_str());
    }
    return s;
}

std::string Bench::summary() const
{
    std::string s;
    s += strf("==== gridsync-bench-segmented summary (%s) ====\n", gpu.c_str());
    s += strf("float32 SUM; time per call = median of %d runs of %d back-to-back calls (CUDA events); "
              "GB/s = (input + offsets + output bytes) / time\n",
              o.runs, o.calls);
    s += "targets (gridsync throughput / CUB throughput): uniform >= 1.0, powerlaw >= 2.0, giant >= 2.0, tiny >= 1.0\n";
    if (o.quick)
        s += "NOTE: --quick (about 2^22 elements per layout): the targets are for the full sizes (about 2^26)\n";
    s += strf("\n%-9s %-17s %9s %9s %9s %7s  %s\n", "layout", "backend", "GB/s", "CUB GB/s", "ratio", "target",
              "verdict");
    int met = 0, total = 0;
    std::vector<std::string> missed;
    for (int id : o.layouts) {
        const Result *cub = nullptr;
        for (const Result &r : results)
            if (r.layout == id && r.impl == "cub")
                cub = &r;
        for (const std::string &b : o.backends) {
            const Result *g = nullptr;
            for (const Result &r : results)
                if (r.layout == id && r.impl == "gridsync" && r.backend == b)
                    g = &r;
            total++;
            const double tgt = layout_target[id];
            std::string verdict;
            double ratio = NAN;
            if (!g)
                verdict = "NOT MET (no result: see the log)";
            else if (g->check != "ok" || !std::isfinite(g->gbps))
                verdict = strf("NOT MET (gridsync %s)", g->check.substr(0, 60).c_str());
            else if (!cub || !std::isfinite(cub->gbps))
                verdict = strf("NOT MET (CUB not measured: %s)", cub ? cub->check.substr(0, 60).c_str() : "-");
            else {
                ratio = g->gbps / cub->gbps;
                if (ratio >= tgt) {
                    verdict = "met";
                    met++;
                } else
                    verdict = "NOT MET";
            }
            if (verdict != "met")
                missed.push_back(strf("%s/%s: %s", layout_name[id], b.c_str(), verdict.c_str()));
            auto num = [](double v, const char *fmt) { return std::isfinite(v) ? strf(fmt, v) : std::string("-"); };
            s += strf("%-9s %-17s %9s %9s %9s %7s  %s\n", layout_name[id], b.c_str(),
                      num(g ? g->gbps : NAN, "%.1f").c_str(), num(cub ? cub->gbps : NAN, "%.1f").c_str(),
                      num(ratio, "%.3fx").c_str(), strf(">=%.1fx", tgt).c_str(), verdict.c_str());
        }
    }
    s += strf("targets met: %d of %d\n", met, total);
    s += exact_summary();
    for (const std::string &m : missed)
        s += "  missed: " + m + "\n";
    /* cuda_sm11_compat against cuda_sm20 (information). */
    for (int id : o.layouts) {
        const Result *a = nullptr, *b = nullptr;
        for (const Result &r : results)
            if (r.layout == id && r.impl == "gridsync") {
                if (r.backend == "cuda_sm20")
                    a = &r;
                if (r.backend == "cuda_sm11_compat")
                    b = &r;
            }
        if (a && b && std::isfinite(a->gbps) && std::isfinite(b->gbps))
            s += strf("cuda_sm11_compat / cuda_sm20 throughput, %s: %.3f\n", layout_name[id], b->gbps / a->gbps);
    }
    s += strf("checks: %d mismatches, %d errors%s\n", mismatches, errors, aborted ? "; ABORTED (see run.log)" : "");
    for (size_t i = 0; i < bad.size() && i < 30; i++)
        s += "  !!! " + bad[i] + "\n";
    return s;
}

/* The exact sums against the default, same backend and layout (target >= 0.8x). */
std::string Bench::exact_summary() const
{
    std::string s = strf("\nexact (GS_SEGMENTED_EXACT) against the default SUM, same backend (target >= 0.8x):\n"
                         "%-9s %-17s %10s %10s %9s\n", "layout", "backend", "default_us", "exact_us", "ratio");
    for (int id : o.layouts)
        for (const std::string &b : o.backends) {
            const Result *d = nullptr, *x = nullptr;
            for (const Result &r : results) {
                if (r.layout != id || r.backend != b)
                    continue;
                if (r.impl == "gridsync")
                    d = &r;
                else if (r.impl == "gridsync-exact")
                    x = &r;
            }
            if (!d || !x || !std::isfinite(d->med) || !std::isfinite(x->med))
                continue;
            s += strf("%-9s %-17s %10.2f %10.2f %8.3fx%s\n", layout_name[id], b.c_str(), d->med, x->med,
                      d->med / x->med, d->med / x->med >= 0.8 ? "" : "  NOT MET");
        }
    return s;
}

void Bench::write_summary() const
{
    std::string t = table(), s = summary();
    printf("%s\n%s", t.c_str(), s.c_str());
    write_summary_file(o.summary, s + t);
}

/* --selftest-summary: made-up timings through the CSV, table and summary code (no GPU). */
[[noreturn]] static void selftest(Bench &b)
{
    b.gpu = "synthetic (no GPU)";
    for (const std::string &be : b.o.backends)
        b.impls.push_back(Impl{be, false, nullptr});
    for (const std::string &be : b.o.backends)
        b.impls.push_back(Impl{be, false, nullptr, true});
    b.impls.push_back(Impl{"-", true, nullptr});
    for (int id : b.o.layouts) {
        Layout L = make_layout(id, b.o.quick, b.o.alpha, b.o.layout_seed);
        const double bytes = Bench::bytes_moved(L.n, L.nseg());
        const double t_cub = bytes / 1.5e6 * (id == L_POWERLAW || id == L_GIANT ? 3.0 : 1.0); /* us at 1.5 TB/s */
        for (size_t i = 0; i < b.impls.size(); i++) {
            const Impl &im = b.impls[i];
            const double f = im.cub ? 1.0 : (id == L_TINY ? 1.1 : 0.4) * (i == 1 ? 1.05 : 1.0);
            const double t = t_cub * f;
            b.row(L, im, b.o.runs, b.o.calls, t, t * 0.98, t * 1.04, im.cub ? 1.0 : t_cub / t, "ok",
                  "synthetic; " + L.desc);
        }
    }
    b.mismatches = 1;
    b.bad.push_back("cuda_sm20 tiny: MISMATCH (synthetic)");
    b.write_summary();

    /* The checking code on the host: the quick layouts' data, summed per segment in float
     * one element after the other (within the tolerance), must pass both passes, and the
     * exact sums' bitwise check on the integer data; a lost element, a NaN (the poison) and
     * a result off by the tolerance must not. */
    int failures = 0;
    for (int id : b.o.layouts) {
        Layout L = make_layout(id, true, b.o.alpha, b.o.layout_seed);
        std::vector<float> data(L.n);
        b.host = data.data();
        for (int integers = 1; integers >= 0; integers--) {
            for (uint64_t i = 0; i < L.n; i++)
                data[i] = rand_value(i, 12345, integers);
            std::vector<hostref_ref> refs;
            b.reference(L, refs);
            std::vector<float> got(L.nseg()), other;
            uint64_t longest = 0;
            for (uint64_t j = 0; j < L.nseg(); j++) {
                float a = 0;
                for (int64_t i = L.offsets[j]; i < L.offsets[j + 1]; i++)
                    a += data[i];
                got[j] = a;
                if (L.offsets[j + 1] - L.offsets[j] > L.offsets[longest + 1] - L.offsets[longest])
                    longest = j;
            }
            const bool exact = integers != 0;
            auto expect = [&](const char *what, const std::string &r, bool ok) {
                const bool good = (r == "ok") == ok;
                printf("selftest %-8s %-5s %-28s %s: %.90s\n", L.name.c_str(), exact ? "exact" : "float", what,
                       good ? "as expected" : "WRONG", r.c_str());
                failures += !good;
            };
            expect("sequential float sums", Bench::compare(L, got, refs, &got, "self", exact, "test"), true);
            other = got;
            other[L.nseg() / 2] = NAN;
            expect("a NaN (poison) result", Bench::compare(L, other, refs, nullptr, "", exact, "test"), false);
            if (exact) {
                /* small integers: the sequential float sums are the exact sums, bit for bit */
                expect("exact sums, bitwise", b.compare_exact(L, got, "test"), true);
                other = got;
                other[L.nseg() / 2] = NAN;
                expect("exact sums, a NaN", b.compare_exact(L, other, "test"), false);
                other = got;
                other[longest] -= data[L.offsets[longest]] != 0 ? data[L.offsets[longest]] : 1.0f;
                expect("a lost element", Bench::compare(L, other, refs, nullptr, "", exact, "test"), false);
            } else {
                other = got;
                const uint64_t j = longest;
                const hostref_tolerance tol = Bench::tolerance(refs[j], exact);
                other[j] = (float)(refs[j].value + 1.5L * hostref_bound(&refs[j], &tol));
                expect("1.5 x tolerance off", Bench::compare(L, other, refs, nullptr, "", exact, "test"), false);
            }
        }
        b.host = nullptr;
    }
    printf("selftest of the checks: %s\n", failures ? "FAILED" : "passed");
    end_selftest(failures ? 1 : 0);
}
