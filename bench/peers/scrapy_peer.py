"""Scrapy / scrapy-redis peer for the crawl benchmark (bench/scenarios/crawl.ts, bench/lib/peers.ts).

Crawls the fixture site breadth first from the seeds to ``maxdepth`` at a fixed concurrency (0: Scrapy's defaults;
``autothrottle``: AutoThrottle on), following every
``a[href]`` and ``area[href]`` (http/https, any host), and counts every response (404s included, as the raw
loop and our crawler do). Host names resolve through the site's host map by a Twisted resolver
(``TWISTED_DNS_RESOLVER``), so the URL set is the one our crawler sees. No items, no pipelines.

Modes: ``scrapy`` (Scrapy's own in-memory scheduler and dupefilter) and ``scrapy-redis`` (scrapy-redis's
Redis scheduler queue and dupefilter on the bench's Redis, under a key prefix of this run).

Protocol with the parent, one line each: stdin gets the JSON options; after an unmeasured warm-up crawl
(to ``warmMaxdepth`` from the warm-up seed) this prints ``ready``; stdin ``go`` starts the measured crawl; at its end
this prints ``done <json>`` and waits for ``exit`` on stdin (the parent reads /proc of this process meanwhile).
"""

import json
import sys
import time
import warnings

from scrapy import Request, Spider
from scrapy.crawler import CrawlerProcess
from scrapy.resolver import CachingThreadedResolver
from scrapy.exceptions import ScrapyDeprecationWarning
from twisted.internet import defer, threads

# scrapy-redis 0.9.1 calls APIs Scrapy 2.19 deprecates (stats with a spider argument): not ours to fix.
warnings.filterwarnings("ignore", category=ScrapyDeprecationWarning)

HOST_MAP: dict[str, str] = {}


class HostMapResolver(CachingThreadedResolver):
    """The default resolver, except that the fixture's host names resolve to the host map's address."""

    def getHostByName(self, name, timeout=()):  # noqa: N802 (Twisted's name)
        address = HOST_MAP.get(name)
        if address is not None:
            return defer.succeed(address)
        return super().getHostByName(name, timeout)


class Tally:
    """Pages as they complete: count, first and last time (epoch ms), failures."""

    def __init__(self, keep_times=False):
        self.times = [] if keep_times else None
        self.pages = 0
        self.ok = 0
        self.failed = 0
        self.first = None
        self.last = None

    def page(self, status):
        now = time.time() * 1000
        self.pages += 1
        if self.times is not None:
            self.times.append(now)
        if status == 200:
            self.ok += 1
        if self.first is None:
            self.first = now
        self.last = now


class FixtureSpider(Spider):
    name = "bench"

    def __init__(self, seeds=(), maxdepth=3, tally=None, **kwargs):
        super().__init__(**kwargs)
        self.seeds = list(seeds)
        self.maxdepth = int(maxdepth)
        self.tally = tally

    async def start(self):
        for url in self.seeds:
            yield Request(url, callback=self.parse, errback=self.failed)

    def parse(self, response):
        self.tally.page(response.status)
        if response.meta.get("depth", 0) >= self.maxdepth or not hasattr(response, "css"):
            return
        for href in response.css("a::attr(href), area::attr(href)").getall():
            url = response.urljoin(href.strip())
            if url.startswith(("http://", "https://")):
                yield Request(url, callback=self.parse, errback=self.failed)

    def failed(self, failure):
        self.tally.failed += 1


def settings_for(options):
    s = {
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": bool(options.get("autothrottle", False)),
        "HTTPERROR_ALLOW_ALL": True,
        "DEPTH_LIMIT": options["maxdepth"],
        # Breadth first (Scrapy's FAQ "Does Scrapy crawl in breadth-first or depth-first order?"), so a
        # page is first seen at its smallest depth and the depth limit keeps the same page set.
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "TWISTED_DNS_RESOLVER": "__main__.HostMapResolver",
        "STATS_DUMP": False,
    }
    # Concurrency 0: Scrapy's own defaults (CONCURRENT_REQUESTS 16, CONCURRENT_REQUESTS_PER_DOMAIN 8).
    if options["concurrency"] > 0:
        s["CONCURRENT_REQUESTS"] = options["concurrency"]
        s["CONCURRENT_REQUESTS_PER_DOMAIN"] = options["concurrency"]
    if options["mode"] == "scrapy-redis":
        prefix = options["redisPrefix"]
        s.update(
            {
                "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
                "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
                "REDIS_URL": options["redisUrl"],
                "SCHEDULER_QUEUE_KEY": prefix + ":%(spider)s:requests",
                "SCHEDULER_DUPEFILTER_KEY": prefix + ":%(spider)s:dupefilter",
                "SCHEDULER_PERSIST": False,
                "SCHEDULER_FLUSH_ON_START": True,
            }
        )
    return s


def main():
    options = json.loads(sys.stdin.readline())
    HOST_MAP.update(options["hostMap"])
    process = CrawlerProcess(settings_for(options))
    result = {}

    @defer.inlineCallbacks
    def run():
        warm = Tally()
        yield process.crawl(FixtureSpider, seeds=options["warmSeeds"], maxdepth=options["warmMaxdepth"], tally=warm)
        print("ready", flush=True)
        line = yield threads.deferToThread(sys.stdin.readline)
        if line.strip() != "go":
            raise RuntimeError("expected go, got %r" % line)
        tally = Tally(keep_times=bool(options.get("keepTimes", False)))
        crawler = process.create_crawler(FixtureSpider)
        if options.get("closeAfterS"):
            # The measured crawl only (the warm-up ran without it): Scrapy's CloseSpider extension ends it after this.
            crawler.settings.set("CLOSESPIDER_TIMEOUT", options["closeAfterS"], priority="cmdline")
        yield process.crawl(crawler, seeds=options["seeds"], maxdepth=options["maxdepth"], tally=tally)
        stats = crawler.stats.get_stats()
        seconds = (tally.last - tally.first) / 1000 if tally.pages > 1 else 0
        result.update(
            {
                "pages": tally.pages,
                "ok": tally.ok,
                "failed": tally.failed,
                "firstMs": tally.first,
                "lastMs": tally.last,
                "seconds": seconds,
                "pagesPerS": (tally.pages - 1) / seconds if seconds > 0 else 0,
                "responses": stats.get("downloader/response_count", 0),
                "filtered": stats.get("dupefilter/filtered", 0),
                "depthMax": stats.get("request_depth_max", 0),
                "finish": stats.get("finish_reason", ""),
            }
        )
        if tally.times is not None:
            result["times"] = tally.times

    def finished(outcome):
        if isinstance(outcome, Exception) or hasattr(outcome, "getTraceback"):
            result["error"] = outcome.getTraceback() if hasattr(outcome, "getTraceback") else str(outcome)
        print("done " + json.dumps(result), flush=True)
        return threads.deferToThread(sys.stdin.readline)

    def stop(_):
        from twisted.internet import reactor

        reactor.stop()

    d = run()
    d.addBoth(finished)
    d.addBoth(stop)
    process.start(stop_after_crawl=False)


if __name__ == "__main__":
    main()
