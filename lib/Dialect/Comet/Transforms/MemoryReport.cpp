//===- MemoryReport.cpp - Print the memory timeline of each function ------===//
#include "comet/Analysis/ActivationLiveness.h"
#include "comet/Dialect/Comet/Transforms/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace comet {
#define GEN_PASS_DEF_COMETMEMORYREPORT
#include "comet/Dialect/Comet/Transforms/Passes.h.inc"
} // namespace comet

using namespace mlir;
using namespace comet;

namespace {

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

/// "1.50 MiB (1572864 B)".
std::string human(int64_t bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024)
    os << llvm::format("%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024)
    os << llvm::format("%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0)
    os << llvm::format("%.2f KiB", b / 1024.0);
  else
    os << bytes << " B";
  return s;
}

double ratio(int64_t before, int64_t after) {
  return after > 0 ? static_cast<double>(before) / after : 0.0;
}

std::string stepLabel(const ActivationLiveness &la, int64_t step) {
  if (step < 0 || step >= la.getNumSteps())
    return "";
  Operation *op = la.getSchedule()[step];
  std::string s = op->getName().getStringRef().str();
  if (auto n = dyn_cast<NameLoc>(op->getLoc()))
    s += " \"" + n.getName().str() + "\"";
  return s;
}

bool isCompressedGraph(const ActivationLiveness &la) {
  return llvm::any_of(la.getValues(), [](const ValueInfo &v) {
    return v.isCompressedHandle();
  });
}

struct MemoryReportPass
    : public comet::impl::CometMemoryReportBase<MemoryReportPass> {
  using Base::Base;

  void runOnOperation() override;
  void printTable(llvm::raw_ostream &os, StringRef funcName,
                  const ActivationLiveness &la, ArrayRef<Candidate> cands);
  void writeJson(llvm::json::OStream &j, StringRef funcName,
                 const ActivationLiveness &la, ArrayRef<Candidate> cands);
};

} // namespace

void MemoryReportPass::printTable(llvm::raw_ostream &os, StringRef funcName,
                                  const ActivationLiveness &la,
                                  ArrayRef<Candidate> cands) {
  const Timeline &tl = la.getTimeline();
  const Timeline &before = la.getUncompressedTimeline();
  os << "comet memory report: @" << funcName << "  steps=" << la.getNumSteps()
     << "  values=" << la.getValues().size()
     << "  dynamic-dim=" << la.getOptions().dynamicDimSize << "\n";
  os << "  predicted peak: " << tl.peak << " B (" << human(tl.peak)
     << ") at step " << tl.peakIndex << " (" << stepLabel(la, tl.peakIndex)
     << ")\n";
  os << "  activation bytes at the peak: " << tl.activationAtPeak << " B ("
     << human(tl.activationAtPeak)
     << "); activation peak: " << tl.activationPeak << " B\n";
  if (isCompressedGraph(la)) {
    unsigned nMask = 0, nSz = 0, nRaw = 0, nFused = 0;
    for (const ValueInfo &v : la.getValues())
      if (v.fusedMaskDecompress)
        ++nFused;
      else if (v.codec)
        (*v.codec == Codec::mask ? nMask
         : *v.codec == Codec::sz ? nSz
                                 : nRaw)++;
    os << "  compressed values: " << (nMask + nSz + nRaw) << " (mask " << nMask
       << ", sz " << nSz << ", raw " << nRaw
       << llvm::format("; sz counted at 1/%g", la.getOptions().szRatio)
       << ", mask at 1 bit per element); mask decompresses fused into "
          "ReluGrad (0 B): "
       << nFused << "\n";
    os << "  without compression: peak " << before.peak << " B ("
       << human(before.peak) << ") at step " << before.peakIndex
       << "; activation bytes at the peak " << before.activationAtPeak
       << " B; activation peak " << before.activationPeak << " B\n";
    os << llvm::format("  reduction: activation bytes at the peak %.2fx, "
                       "activation peak %.2fx, peak %.2fx\n",
                       ratio(before.activationAtPeak, tl.activationAtPeak),
                       ratio(before.activationPeak, tl.activationPeak),
                       ratio(before.peak, tl.peak));
  }

  int64_t candBytes = 0;
  for (const Candidate &c : cands)
    candBytes += la.getValue(c.valueId).bytes;
  os << "  long-lived candidates (min-bytes=" << minBytes
     << ", min-distance=" << minDistance << "): " << cands.size() << ", "
     << candBytes << " B\n";

  // Top values by bytes x lifetime, the tensors that weigh most on the
  // timeline; compressed handles and decompressed copies are shown through
  // their original.
  SmallVector<int> ids;
  for (auto [id, v] : llvm::enumerate(la.getValues()))
    if (v.rootId < 0 && v.bytes > 0)
      ids.push_back(id);
  auto weight = [&](int id) {
    const ValueInfo &v = la.getValue(id);
    return static_cast<double>(v.bytes) * (v.end - v.start + 1);
  };
  llvm::stable_sort(ids, [&](int a, int b) { return weight(a) > weight(b); });
  if (static_cast<int64_t>(ids.size()) > top)
    ids.resize(std::max<int64_t>(top, 0));
  os << "  top " << ids.size() << " values by bytes x lifetime:\n";
  os << llvm::format("  %-4s %-28s %-15s %12s %15s %8s  %s\n", "#", "name",
                     "category", "bytes", "interval", "steps", "compressed");
  for (auto [rank, id] : llvm::enumerate(ids)) {
    const ValueInfo &v = la.getValue(id);
    std::string interval =
        "[" + std::to_string(v.start) + ", " + std::to_string(v.end) + "]";
    std::string comp = "-";
    if (v.compressedId >= 0) {
      const ValueInfo &h = la.getValue(v.compressedId);
      comp =
          stringifyCodec(*h.codec).str() + " " + std::to_string(h.bytes) + " B";
      if (h.eb) {
        std::string s;
        llvm::raw_string_ostream o(s);
        o << llvm::format(" eb=%.3g", *h.eb);
        if (h.slot)
          o << " slot=" << *h.slot;
        comp += s;
      }
    }
    std::string name =
        v.name.size() > 28 ? v.name.substr(0, 25) + "..." : v.name;
    os << llvm::format(
        "  %-4zu %-28s %-15s %12lld %15s %8lld  %s\n", rank + 1, name.c_str(),
        stringifyValueCategory(v.category).str().c_str(),
        static_cast<long long>(v.bytes), interval.c_str(),
        static_cast<long long>(v.end - v.start + 1), comp.c_str());
  }
}

/// The codec, eb and slot of a compressed handle.
static void writeCodec(llvm::json::OStream &j, const ValueInfo &h) {
  j.attribute("codec", stringifyCodec(*h.codec));
  if (h.eb)
    j.attribute("eb", *h.eb);
  if (h.slot)
    j.attribute("slot", *h.slot);
}

static void writeTimeline(llvm::json::OStream &j, StringRef key,
                          ArrayRef<int64_t> tl) {
  j.attributeArray(key, [&] {
    for (int64_t b : tl)
      j.value(b);
  });
}

void MemoryReportPass::writeJson(llvm::json::OStream &j, StringRef funcName,
                                 const ActivationLiveness &la,
                                 ArrayRef<Candidate> cands) {
  const Timeline &tl = la.getTimeline();
  const Timeline &before = la.getUncompressedTimeline();
  j.object([&] {
    j.attribute("name", funcName);
    j.attribute("num_steps", la.getNumSteps());
    j.attribute("dynamic_dim_size", la.getOptions().dynamicDimSize);
    j.attribute("sz_ratio_assumed", la.getOptions().szRatio);
    j.attribute("compressed", isCompressedGraph(la));
    j.attribute("peak_bytes", tl.peak);
    j.attribute("peak_step", tl.peakIndex);
    j.attribute("activation_bytes_at_peak", tl.activationAtPeak);
    j.attribute("activation_peak_bytes", tl.activationPeak);
    j.attribute("peak_bytes_before", before.peak);
    j.attribute("peak_step_before", before.peakIndex);
    j.attribute("activation_bytes_at_peak_before", before.activationAtPeak);
    j.attribute("activation_peak_bytes_before", before.activationPeak);
    j.attribute("activation_ratio_at_peak",
                ratio(before.activationAtPeak, tl.activationAtPeak));
    j.attribute("peak_ratio", ratio(before.peak, tl.peak));
    writeTimeline(j, "timeline", tl.total);
    writeTimeline(j, "activation_timeline", tl.activation);
    writeTimeline(j, "timeline_before", before.total);
    writeTimeline(j, "activation_timeline_before", before.activation);
    j.attributeArray("steps", [&] {
      for (Operation *op : la.getSchedule())
        j.value(op->getName().getStringRef());
    });
    j.attributeArray("candidates", [&] {
      for (const Candidate &c : cands) {
        const ValueInfo &v = la.getValue(c.valueId);
        j.object([&] {
          j.attribute("value", v.name);
          j.attribute("bytes", v.bytes);
          j.attribute("def", v.def);
          j.attribute("last_near_use", c.lastNear);
          j.attribute("first_far_use", c.firstFar);
          j.attributeArray("far_consumers", [&] {
            for (unsigned ui : c.farUses)
              j.value(stringifyConsumerKind(v.uses[ui].kind));
          });
        });
      }
    });
    j.attributeArray("values", [&] {
      for (auto [id, v] : llvm::enumerate(la.getValues())) {
        j.object([&] {
          j.attribute("id", static_cast<int64_t>(id));
          j.attribute("name", v.name);
          j.attribute("producer", v.producer);
          j.attribute("producer_op", v.producerOp);
          j.attribute("category", stringifyValueCategory(v.category));
          j.attribute("persistent", v.persistent);
          j.attribute("type", typeString(v.value.getType()));
          j.attribute("dynamic", v.hasDynamicDim);
          j.attribute("elements", v.numElements);
          j.attribute("tensor_bytes", v.tensorBytes);
          j.attribute("bytes", v.bytes);
          j.attribute("def", v.def);
          j.attribute("last_use", v.lastUse);
          j.attributeArray("interval", [&] {
            j.value(v.start);
            j.value(v.end);
          });
          j.attributeArray("consumers", [&] {
            for (const ValueUse &u : v.uses)
              j.object([&] {
                j.attribute("op", u.user->getName().getStringRef());
                if (auto n = dyn_cast<NameLoc>(u.user->getLoc()))
                  j.attribute("node", n.getName().getValue());
                j.attribute("step", u.index);
                j.attribute("operand", static_cast<int64_t>(u.operandNumber));
                j.attribute("kind", stringifyConsumerKind(u.kind));
              });
          });
          if (v.codec)
            j.attributeObject("stored_as", [&] { writeCodec(j, v); });
          if (v.rootId >= 0)
            j.attribute(v.codec ? "compresses" : "decompressed_from",
                        la.getValue(v.rootId).name);
          if (v.fusedMaskDecompress)
            j.attribute("fused_mask_decompress", true);
          if (v.compressedId >= 0) {
            const ValueInfo &h = la.getValue(v.compressedId);
            j.attributeObject("compressed", [&] {
              writeCodec(j, h);
              j.attribute("stored_bytes", h.bytes);
              j.attributeArray("handle_interval", [&] {
                j.value(h.start);
                j.value(h.end);
              });
            });
          } else {
            j.attribute("compressed", nullptr);
          }
        });
      }
    });
  });
}

void MemoryReportPass::runOnOperation() {
  if (batchSize <= 0 || !(szRatio > 0) || minBytes < 0 || minDistance < 1) {
    getOperation().emitError()
        << "comet-memory-report: batch-size and sz-ratio must be positive, "
           "min-bytes non-negative and min-distance at least 1";
    return signalPassFailure();
  }
  std::unique_ptr<llvm::raw_fd_ostream> jsonFile;
  if (!jsonPath.empty()) {
    std::error_code ec;
    jsonFile = std::make_unique<llvm::raw_fd_ostream>(jsonPath, ec,
                                                      llvm::sys::fs::OF_Text);
    if (ec) {
      getOperation().emitError() << "comet-memory-report: cannot write '"
                                 << jsonPath << "': " << ec.message();
      return signalPassFailure();
    }
  }
  LivenessOptions opts;
  opts.dynamicDimSize = batchSize;
  opts.szRatio = szRatio;

  std::optional<llvm::json::OStream> j;
  if (jsonFile) {
    j.emplace(*jsonFile, 1);
    j->objectBegin();
    j->attributeBegin("functions");
    j->arrayBegin();
  }
  for (Operation &op : getOperation().getBody()->getOperations()) {
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!func || func.isExternal())
      continue;
    auto &la = getChildAnalysis<ActivationLiveness>(func);
    la.setOptions(opts);
    SmallVector<Candidate> cands = la.getCandidates(minBytes, minDistance);
    ++numFunctions;
    numCandidates += cands.size();
    printTable(llvm::errs(), func.getName(), la, cands);
    if (j)
      writeJson(*j, func.getName(), la, cands);
  }
  if (j) {
    j->arrayEnd();
    j->attributeEnd();
    j->objectEnd();
    *jsonFile << "\n";
  }
  markAllAnalysesPreserved();
}
