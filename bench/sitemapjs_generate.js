// sitemap.js (npm `sitemap`) generating split sitemaps + index from the same URL list, for comparison.
// Usage: node sitemapjs_generate.js INPUT OUTDIR gzip|plain
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const zlib = require("zlib");
const { SitemapAndIndexStream, SitemapStream } = require("sitemap");

const [input, outDir, mode] = process.argv.slice(2);
const gz = mode === "gzip";
const ext = gz ? ".xml.gz" : ".xml";
fs.mkdirSync(outDir, { recursive: true });
const t0 = process.hrtime.bigint();
let count = 0;

const sms = new SitemapAndIndexStream({
  limit: 50000,
  getSitemapStream: (i) => {
    const sitemapStream = new SitemapStream({ hostname: "https://www.example.com" });
    const name = `sitemap-${i}${ext}`;
    const ws = fs.createWriteStream(path.join(outDir, name));
    if (gz) sitemapStream.pipe(zlib.createGzip({ level: 6 })).pipe(ws);
    else sitemapStream.pipe(ws);
    return [`https://www.example.com/${name}`, sitemapStream, ws];
  },
});
const indexOut = fs.createWriteStream(path.join(outDir, `sitemap${ext}`));
(gz ? sms.pipe(zlib.createGzip({ level: 6 })) : sms).pipe(indexOut);

const rl = readline.createInterface({ input: fs.createReadStream(input), crlfDelay: Infinity });
(async () => {
  for await (const line of rl) {
    const [url, lastmod] = line.split("\t");
    if (!sms.write({ url, lastmod })) await new Promise((r) => sms.once("drain", r));
    count++;
  }
  sms.end();
  indexOut.on("finish", () => {
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const status = fs.readFileSync("/proc/self/status", "utf8");
    const peakKb = Number(/VmHWM:\s+(\d+)/.exec(status)[1]);
    console.log("BENCH_RESULT " + JSON.stringify({ count, seconds, peak_kb: peakKb }));
  });
})();
