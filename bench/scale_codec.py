"""Issue 27: measure the segment codec (zstd levels, gzip, none) on real episode lines:
size ratio and MB/s. Run: PYTHONPATH=. .venv/bin/python bench/scale_codec.py"""
import gzip, time, zstandard, random, sys
from ek_agents.base import TaskSpec
from ek_agents.harness import run_trials
from ek_agents.core import canonical_json
from tests.pipeline.pipeline_agents import counting_agent
tasks=[TaskSpec(f"task-{i:05d}", input=f"word{i}", gold=f"WORD{i}") for i in range(40)]
def plain(task,*,seed): return task.input.upper() if (seed*7+len(task.task_id))%3 else "?"
for name,agent in (("plain",plain),("priced",counting_agent)):
    eps=run_trials(agent,tasks,k=100,seed=1)
    data=b"".join(canonical_json(e.to_dict())+b"\n" for e in eps)
    print(f"{name}: {len(eps)} lines, {len(data)} B raw, {len(data)/len(eps):.0f} B/line")
    rows=[("none",lambda d:d,lambda d:d)]
    for lv in (1,3,6,9):
        c=zstandard.ZstdCompressor(level=lv); dd=zstandard.ZstdDecompressor()
        rows.append((f"zstd-{lv}",c.compress,dd.decompress))
    for lv in (1,6):
        rows.append((f"gzip-{lv}",lambda d,lv=lv:gzip.compress(d,lv,mtime=0),gzip.decompress))
    for n,comp,dec in rows:
        t=time.perf_counter();
        for _ in range(5): z=comp(data)
        tc=(time.perf_counter()-t)/5
        t=time.perf_counter()
        for _ in range(5): dec(z)
        td=(time.perf_counter()-t)/5
        print(f"  {n:8s} {len(z):8d} B  ratio {len(data)/len(z):5.1f}  compress {len(data)/tc/1e6:7.0f} MB/s  decompress {len(data)/td/1e6:7.0f} MB/s")
