#!/usr/bin/env python3
"""tests/cache/compile_cache_check.py — kfuse compile and kfuse warm on the
kernel cache (docs/CACHE.md), without a GPU.

    compile_cache_check.py KFUSE CACHE_COMPILE SOURCE_DIR RUNTIME_LIB

CI cannot verify a unit, so entries are made by tests/cache/cache_compile.c,
which runs the compile driver with a synthetic picker (every candidate
correct, GPU "synthetic-test-gpu"). Then, through the real `kfuse`:

1. a rebuild from the cache alone (--require-cached) with NVRTC made
   unloadable: every unique unit a hit, none compiled, and the module the
   same bytes as the one the seeding compile wrote;
2. --require-cached on an empty cache: exit 1, one error line per unique
   group naming it and its key, no module written; without it, a compile
   on the empty cache misses, stores nothing (nothing verified) and works;
3. a corrupt entry (a byte of its cubin changed behind the cache's back):
   a warning naming the entry, a miss, the group rebuilt with NVRTC, the
   module still right; --require-cached then names exactly that group;
4. export -> import into an empty cache: 100% hits;
5. kfuse warm's split: shards 1/2 and 2/2 of three models into one cache
   give the same entries as 1/1 into another (keys and payload hashes),
   and each group lands in exactly one shard;
6. kfuse warm without a GPU: exit 1, says nothing was judged, stores
   nothing; --kernel-option turns the cache off (said in the report);
7. 8 compiles at once on one cache, 3 of them SIGKILLed at random moments
   (KFUSE_TEST_SEED replays a run): the cache verifies, every unit a
   surviving compile stored is there, and each model then builds from the
   cache alone wherever a survivor compiled it;
8. through an HTTP remote (nginx with WebDAV on loopback, as
   tests/cache/remote_check.py starts it): two shards warming into their
   own local caches and one remote leave on it what one job stores
   (keys and payloads); a machine with an empty cache builds every model
   from the remote alone, without NVRTC, and a second build needs no
   network; a read-only remote receives nothing; --offline and a remote
   that refuses connections cost nothing and fail nothing.
"""
import json
import os
import random
import signal
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

KFUSE, HELPER, SRC, RUNTIME = sys.argv[1:5]
FIX = os.path.join(SRC, "tests", "fixtures")
MODELS = [os.path.join(FIX, m) for m in ("resnet_block.core.pt2", "mlp.core.pt2", "gpt_block.core.pt2")]
ENV = dict(os.environ, KFUSE_RUNTIME_LIB=RUNTIME)
ENV.pop("KFUSE_CACHE_DIR", None)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    else:
        print("ok:", what)


def run(args, env=ENV, expect=0):
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if expect is not None and p.returncode != expect:
        print(" ".join(args), "->", p.returncode)
        print(p.stdout[-3000:], p.stderr[-3000:])
    return p


def ls(cache):
    p = run([KFUSE, "cache", "ls", "--json", "--cache", cache])
    return {e["key"]: e for e in json.loads(p.stdout)} if p.returncode == 0 else {}


def remote_checks(tmp, model, noc):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import remote_check  # the nginx the remote's own test starts
    binary = remote_check.find_nginx()
    if not binary:
        print("SKIP (section 8): nginx not found (scripts/deps.sh installs it)")
        return
    base = os.path.join(tmp, "nginx")
    os.makedirs(base)
    ng = remote_check.Nginx(binary, base, "u", "p", "t")
    why = ng.start()
    if why:
        check(False, f"nginx starts: {why[-500:]}")
        return
    try:
        url = ng.url("cache")
        on_server = lambda: {f for _, _, fs in os.walk(os.path.join(ng.root, "cache")) for f in fs}
        r1, r2, r3 = (os.path.join(tmp, x) for x in ("runner1", "runner2", "runner3"))
        env = dict(ENV, CACHE_COMPILE_REMOTE=url)
        a = run([HELPER, "warm", r1, "1/2"] + MODELS, env=env)
        b = run([HELPER, "warm", r2, "2/2"] + MODELS, env=env)
        c = run([HELPER, "warm", r3, "1/1"] + MODELS)
        check(a.returncode == b.returncode == c.returncode == 0, "two runners warm their shards through one remote")
        one = ls(r3)
        check(on_server() == set(one), f"the remote holds what one job stores ({len(on_server())} vs {len(one)})")
        pulled = os.path.join(tmp, "pulled")
        p = run([KFUSE, "cache", "pull", "--remote", url, "--cache", pulled] + sorted(one))
        got = ls(pulled)
        check(p.returncode == 0 and set(got) == set(one) and
              all(got[k]["payload_hash"] == one[k]["payload_hash"] for k in one),
              "with the same payloads (pulled back and listed)")
        # a CPU builder with an empty cache: everything from the remote
        builder = os.path.join(tmp, "builder")
        for m in MODELS:
            rep = os.path.join(tmp, "rb.json")
            p = run([KFUSE, "compile", m, "-o", os.path.join(tmp, "rb.so"), "--cache", builder, "--remote", url,
                     "--require-cached", "--report", rep], env=noc)
            r = json.load(open(rep)) if p.returncode == 0 else {"cache": {}}
            check(p.returncode == 0 and r["units_compiled"] == 0 and
                  r["cache"].get("hits") == r["unique_units"],
                  f"{os.path.basename(m)} builds from the remote alone ({r['cache'].get('hits_remote')} remote hits)")
        n_get = len(ng.log_lines("GET", "cache"))
        p = run([KFUSE, "compile", model, "-o", os.path.join(tmp, "rb.so"), "--cache", builder, "--remote", url,
                 "--require-cached"], env=noc)
        check(p.returncode == 0 and len(ng.log_lines("GET", "cache")) == n_get,
              "the next build finds everything locally: no request reaches the remote")
        # read-only: a new unit is stored locally only
        ro = os.path.join(tmp, "ro")
        before, puts = on_server(), len(ng.log_lines("PUT", "cache"))
        p = run([HELPER, "compile", os.path.join(FIX, "norms.core.pt2"), os.path.join(tmp, "ro.so"), ro],
                env=dict(ENV, CACHE_COMPILE_REMOTE=url, CACHE_COMPILE_REMOTE_RO="1"))
        check(p.returncode == 0 and ls(ro) and on_server() == before and len(ng.log_lines("PUT", "cache")) == puts,
              f"a read-only remote receives nothing ({len(ls(ro))} units stored locally)")
        # --offline and a refused remote
        p = run([KFUSE, "compile", model, "-o", os.path.join(tmp, "off.so"), "--cache", os.path.join(tmp, "off"),
                 "--remote", url, "--offline"], expect=2)
        check(p.returncode == 2 and "--offline" in p.stderr, "--offline with --remote is a usage error")
        n_get = len(ng.log_lines("GET", "cache"))
        p = run([KFUSE, "compile", model, "-o", os.path.join(tmp, "off.so"), "--cache", os.path.join(tmp, "off"),
                 "--offline"], env=dict(ENV, KFUSE_CACHE_REMOTE=url))
        check(p.returncode == 0 and len(ng.log_lines("GET", "cache")) == n_get,
              "--offline leaves $KFUSE_CACHE_REMOTE alone")
        dead = f"http://127.0.0.1:{remote_check.free_port()}/cache"
        t0 = time.monotonic()
        p = run([KFUSE, "compile", model, "-o", os.path.join(tmp, "dead.so"), "--cache", os.path.join(tmp, "dead"),
                 "--remote", dead, "--remote-timeout", "5"])
        dt = time.monotonic() - t0
        check(p.returncode == 0 and p.stderr.count("warning") >= 1 and dt < 15,
              f"a remote refusing connections: a warning, the build goes on ({dt:.1f} s)")
    finally:
        ng.stop()


def main():
    tmp = tempfile.mkdtemp(prefix="kfuse-cache-compile-")
    try:
        model = MODELS[0]
        seeded = os.path.join(tmp, "seed")
        # the seeding compile: every unique group judged (synthetically) and stored
        # modules of one name in their own directories: a module records its
        # weights file's name, so only same-named modules can be the same bytes
        for sub in ("a", "b", "d"):
            os.mkdir(os.path.join(tmp, sub))
        mod = {sub: os.path.join(tmp, sub, "m.so") for sub in ("a", "b", "d")}
        p = run([HELPER, "compile", model, mod["a"], seeded, os.path.join(tmp, "a.json")])
        check(p.returncode == 0, "seeding compile with the synthetic picker")
        a = json.load(open(os.path.join(tmp, "a.json")))
        n = a["unique_units"]
        check(a["cache"]["used"] and a["cache"]["stored"] == n and a["cache"]["misses"] == n,
              f"seeding: all {n} unique units missed and were stored ({a['cache']})")
        entries = ls(seeded)
        check(len(entries) == n, f"the cache lists {len(entries)} entries for {n} units")
        check(all(e["gpu"] == "synthetic-test-gpu" and e["reward"] == 1 for e in entries.values()),
              "entries say they are synthetic")

        # 1. a rebuild from the cache alone, NVRTC unloadable
        noc = dict(ENV, KFUSE_NVRTC_LIBRARY=os.path.join(tmp, "no-such-libnvrtc.so"))
        t0 = time.monotonic()
        p = run([KFUSE, "compile", model, "-o", mod["b"], "--cache", seeded,
                 "--require-cached", "--report", os.path.join(tmp, "b.json")], env=noc)
        dt = time.monotonic() - t0
        check(p.returncode == 0, f"rebuild with --require-cached and no NVRTC ({dt:.2f} s)")
        if p.returncode == 0:
            b = json.load(open(os.path.join(tmp, "b.json")))
            check(b["units_from_cache"] == n and b["units_compiled"] == 0 and b["units_judged"] == 0,
                  f"rebuild: {b['units_from_cache']} of {n} units from the cache, "
                  f"{b['units_compiled']} compiled, {b['units_judged']} judged")
            check(b["verified"], "a module whose units all came verified from the cache says verified")
            cached = [gr for gr in b["group_list"] if "cached" in gr]
            check(all(gr["cached"]["gpu"] == "synthetic-test-gpu" for gr in cached) and cached,
                  "the report names each hit's GPU")
            same = open(mod["a"], "rb").read() == open(mod["b"], "rb").read()
            check(same, "the module rebuilt from the cache is the same bytes as the seeding compile's")
            wa = open(mod["a"] + ".weights", "rb").read()
            check(wa == open(mod["b"] + ".weights", "rb").read(), "and so are its weights")

        # 1b. the judging time: with each judge call taking 100 ms and 0.25 s
        # to spend, three unique units are judged, those moving the most
        # bytes; the others keep the rule's unit (not judged, not stored)
        slow = dict(ENV, CACHE_COMPILE_PICK_MS="100", CACHE_COMPILE_JUDGE_SECONDS="0.25")
        p = run([HELPER, "compile", model, os.path.join(tmp, "j.so"), os.path.join(tmp, "jt"),
                 os.path.join(tmp, "j.json")], env=slow)
        j = json.load(open(os.path.join(tmp, "j.json"))) if p.returncode == 0 else {}
        check(p.returncode == 0 and j["units_judged"] == 3 and j["units_over_judge_time"] == n - 3 and
              j["cache"]["stored"] == 3, f"--judge-seconds 0.25 at 0.1 s a group: "
              f"{j.get('units_judged')} judged, {j.get('units_over_judge_time')} left to the rule of {n}")
        if j:
            firsts = {}
            for gr in j["group_list"]:
                firsts.setdefault(gr["key"], gr)
            judged = [gr["io_bytes"] for gr in firsts.values() if "candidates" in gr]
            rest = [gr["io_bytes"] for gr in firsts.values() if "candidates" not in gr]
            check(len(judged) == 3 and min(judged) >= max(rest),
                  f"the judged groups move the most bytes ({sorted(judged)} against at most {max(rest)})")
            check(any("--judge-seconds" in gr.get("judge", "") for gr in firsts.values()),
                  "the report says why a group was not judged")
        # kfuse warm has no judging time: every group judged
        p = run([HELPER, "warm", os.path.join(tmp, "jw"), "1/1", model], env=slow)
        check(p.returncode == 0 and len(ls(os.path.join(tmp, "jw"))) == n,
              f"kfuse warm judges every group whatever the judging time ({p.returncode})")

        # 2. --require-cached on an empty cache
        empty = os.path.join(tmp, "empty")
        out = os.path.join(tmp, "c.so")
        p = run([KFUSE, "compile", model, "-o", out, "--cache", empty, "--require-cached"], expect=1)
        errs = [l for l in p.stderr.splitlines() if "misses the kernel cache (key " in l]
        check(p.returncode == 1 and len(errs) == n, f"--require-cached on an empty cache: exit {p.returncode}, "
              f"{len(errs)} groups named of {n}")
        check(not os.path.exists(out), "and no module written")
        check(all(k in p.stderr for k in entries), "each missing group's key is the one the seeding stored")
        p = run([KFUSE, "compile", model, "-o", out, "--cache", empty, "--report", out + ".json"])
        c = json.load(open(out + ".json")) if p.returncode == 0 else {}
        check(p.returncode == 0 and c["cache"]["misses"] == n and c["cache"]["stored"] == 0 and
              c["units_compiled"] == n, "a compile on an empty cache without a GPU: all miss, nothing stored")

        # 3. a corrupt entry
        bad = os.path.join(tmp, "bad")
        shutil.copytree(seeded, bad)
        db = sqlite3.connect(os.path.join(bad, "index.sqlite"))
        key, = db.execute("SELECT key FROM entries WHERE cubin IS NOT NULL ORDER BY key LIMIT 1").fetchone()
        blob = bytearray(db.execute("SELECT cubin FROM entries WHERE key = ?", (key,)).fetchone()[0])
        blob[len(blob) // 2] ^= 0x40
        db.execute("UPDATE entries SET cubin = ? WHERE key = ?", (bytes(blob), key))
        db.commit()
        db.close()
        p = run([KFUSE, "compile", model, "-o", mod["d"], "--cache", bad,
                 "--report", os.path.join(tmp, "d.json")])
        check(p.returncode == 0 and key[:16] in p.stderr and "warning" in p.stderr,
              "a corrupt entry: a warning naming it, and the compile goes on")
        if key[:16] not in p.stderr:
            print(p.stderr[-2000:])
        if p.returncode == 0:
            d = json.load(open(os.path.join(tmp, "d.json")))
            check(d["cache"]["hits"] == n - 1 and d["units_compiled"] == 1,
                  f"the corrupt entry is a miss, rebuilt ({d['cache']['hits']} hits, {d['units_compiled']} compiled)")
            same = open(mod["a"], "rb").read() == open(mod["d"], "rb").read()
            check(same, "and the module is the same")
        p = run([KFUSE, "compile", model, "-o", os.path.join(tmp, "e.so"), "--cache", bad, "--require-cached"],
                expect=1)
        errs = [l for l in p.stderr.splitlines() if "misses the kernel cache (key " in l]
        check(p.returncode == 1 and len(errs) == 1 and key in errs[0],
              "then --require-cached names exactly that group")

        # 4. export -> import into an empty cache
        art = os.path.join(tmp, "cache.kfc")
        run([KFUSE, "cache", "export", art, "--cache", seeded])
        imp = os.path.join(tmp, "imported")
        run([KFUSE, "cache", "import", art, "--cache", imp])
        p = run([KFUSE, "compile", model, "-o", os.path.join(tmp, "f.so"), "--cache", imp, "--require-cached",
                 "--report", os.path.join(tmp, "f.json")], env=noc)
        f = json.load(open(os.path.join(tmp, "f.json"))) if p.returncode == 0 else {"units_from_cache": -1}
        check(f["units_from_cache"] == n, f"export -> import: {f['units_from_cache']} of {n} hits")

        # --reverify: each hit judged again; one that fails is dropped and rebuilt
        rvc = os.path.join(tmp, "rv")
        shutil.copytree(seeded, rvc)
        p = run([HELPER, "compile", model, os.path.join(tmp, "rv.so"), rvc, os.path.join(tmp, "rv.json")],
                env=dict(ENV, CACHE_COMPILE_REVERIFY="1"))
        r = json.load(open(os.path.join(tmp, "rv.json"))) if p.returncode == 0 else {"group_list": []}
        again = [gr for gr in r["group_list"] if gr.get("cached", {}).get("verified_again")]
        check(p.returncode == 0 and len(again) == n and r.get("units_compiled") == 0,
              f"--reverify: {len(again)} of {n} hits judged again, none rebuilt")
        p = run([HELPER, "compile", model, os.path.join(tmp, "rv2.so"), rvc, os.path.join(tmp, "rv2.json")],
                env=dict(ENV, CACHE_COMPILE_REVERIFY="1", CACHE_COMPILE_VERDICT="fail"))
        r = json.load(open(os.path.join(tmp, "rv2.json"))) if p.returncode == 0 else {}
        check(p.returncode == 0 and p.stderr.count("failed the judge again") == n and r.get("units_compiled") == n
              and r.get("units_from_cache") == 0 and not r.get("verified"),
              "--reverify with failing hits: each dropped with a warning and rebuilt, the module unverified")
        check(not ls(rvc), "and the failed entries are gone from the cache (nothing verified replaced them)")

        # 5. kfuse warm's shards
        one, two = os.path.join(tmp, "one"), os.path.join(tmp, "two")
        p1 = run([HELPER, "warm", one, "1/1"] + MODELS)
        s1 = run([HELPER, "warm", two, "1/2"] + MODELS)
        s2 = run([HELPER, "warm", two, "2/2"] + MODELS)
        check(p1.returncode == s1.returncode == s2.returncode == 0, "kfuse warm 1/1, 1/2, 2/2")
        e1, e2 = ls(one), ls(two)
        check(e1 and set(e1) == set(e2), f"two shards cache the same keys as one job ({len(e2)} vs {len(e1)})")
        check(all(e1[k]["payload_hash"] == e2[k]["payload_hash"] for k in e1 if k in e2),
              "with the same payloads")
        c1 = dict(kv.split() for kv in [" ".join(x) for x in zip(*[iter(s1.stdout.split())] * 2)])
        c2 = dict(kv.split() for kv in [" ".join(x) for x in zip(*[iter(s2.stdout.split())] * 2)])
        check(int(c1["in_shard"]) + int(c2["in_shard"]) == int(c1["unique"]) == len(e1),
              f"each group in exactly one shard ({c1['in_shard']} + {c2['in_shard']} of {c1['unique']})")
        again = run([HELPER, "warm", two, "1/1"] + MODELS)
        c3 = dict(kv.split() for kv in [" ".join(x) for x in zip(*[iter(again.stdout.split())] * 2)])
        check(c3.get("hits") == c3.get("unique") and c3.get("stored") == "0",
              "warming a warm cache again: every group a hit, nothing stored")
        for m in MODELS:
            p = run([KFUSE, "compile", m, "-o", os.path.join(tmp, "w.so"), "--cache", two, "--require-cached"],
                    env=noc)
            check(p.returncode == 0, f"{os.path.basename(m)} builds from the warmed cache alone")

        # 6. kfuse warm without a GPU; options that turn the cache off
        p = run([KFUSE, "warm", model, "--cache", os.path.join(tmp, "nogpu")], expect=1)
        check(p.returncode == 1 and "not judged" in p.stdout + p.stderr and not ls(os.path.join(tmp, "nogpu")),
              "kfuse warm without a GPU: exit 1, nothing judged or stored")
        p = run([KFUSE, "warm", "--shard", "3/2", model], expect=2)
        check(p.returncode == 2 and "--shard" in p.stderr, "kfuse warm --shard 3/2 is a usage error")
        p = run([KFUSE, "compile", model, "-o", os.path.join(tmp, "g.so"), "--cache", seeded,
                 "--kernel-option", "block=128", "--report", os.path.join(tmp, "g.json")])
        g = json.load(open(os.path.join(tmp, "g.json"))) if p.returncode == 0 else {"cache": {}}
        check(g["cache"].get("used") is False and "kernel-option" in g["cache"].get("why", ""),
              "--kernel-option: the cache is not used, and the report says why")
        p = run([KFUSE, "compile", model, "-o", os.path.join(tmp, "h.so"), "--no-cache", "--require-cached"],
                expect=2)
        check(p.returncode == 2, "--no-cache with --require-cached is a usage error")
        # 7. concurrent compiles, some killed
        seed = int(os.environ.get("KFUSE_TEST_SEED", random.randrange(1 << 30)))
        rng = random.Random(seed)
        print(f"concurrent compiles: KFUSE_TEST_SEED={seed}")
        shared = os.path.join(tmp, "shared")
        procs = []
        for i in range(8):
            m = MODELS[i % len(MODELS)]
            os.mkdir(os.path.join(tmp, f"p{i}"))
            so = os.path.join(tmp, f"p{i}", "m.so")
            rep = os.path.join(tmp, f"p{i}", "r.json")
            procs.append((subprocess.Popen([HELPER, "compile", m, so, shared, rep], env=ENV,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), m, rep))
        victims = rng.sample(range(8), 3)
        t0 = time.monotonic()
        for v in sorted(victims, key=lambda _: rng.random()):
            time.sleep(rng.uniform(0.0, 0.8))
            procs[v][0].send_signal(signal.SIGKILL)
        survivors = []
        for i, (pr, m, rep) in enumerate(procs):
            _, err = pr.communicate()
            if i in victims and pr.returncode == -signal.SIGKILL:
                continue
            if pr.returncode != 0:
                check(False, f"concurrent compile {i} ({os.path.basename(m)}) exit {pr.returncode}: {err[-500:]}")
                continue
            survivors.append((m, json.load(open(rep))))
        print(f"  {len(survivors)} survivors in {time.monotonic() - t0:.1f} s; killed {sorted(victims)}")
        p = run([KFUSE, "cache", "verify", "--cache", shared])
        check(p.returncode == 0 and "0 corrupt" in p.stdout, f"the shared cache verifies: {p.stdout.strip()}")
        have = ls(shared)
        want = {gr["cache_key"] for _, r in survivors for gr in r["group_list"] if "cache_key" in gr}
        check(want <= set(have), f"every unit a survivor stored is there ({len(want & set(have))} of {len(want)})")
        for m in {m for m, _ in survivors}:
            p = run([KFUSE, "compile", m, "-o", os.path.join(tmp, "s.so"), "--cache", shared, "--require-cached"],
                    env=noc)
            check(p.returncode == 0, f"{os.path.basename(m)} builds from the shared cache alone")
        remote_checks(tmp, model, noc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
