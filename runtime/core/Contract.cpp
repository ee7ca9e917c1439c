//===- Contract.cpp - Operand views, presence, overlaps, staging ----------===//
#include "Contract.h"
#include "Context.h"

#include <cstring>

namespace comet::rt {

int32_t Call::bind(Tensor &t, const comet_rt_memref *m, const char *name,
                   int32_t elemBytes) {
  t = Tensor();
  t.name = name;
  t.elemBytes = elemBytes;
  if (!m || !m->descriptor)
    return COMET_RT_SUCCESS; // absent; endDeclarations decides
  int64_t dims[16], n = 0;
  void *data = nullptr;
  if (m->rank > kMaxRank)
    return fail(name, ": rank ", m->rank, " is above ", kMaxRank,
                ", the runtime's limit");
  if (const char *why =
          comet_rt_memref_view(m, elemBytes, kMaxRank, &data, dims, &n)) {
    if (std::strcmp(why, "not contiguous row-major") == 0)
      return fail(name, ": memref ",
                  shapeStr(std::vector<int64_t>(dims, dims + m->rank)),
                  " is not contiguous row-major");
    return fail(name, ": ", why);
  }
  t.data = data;
  t.dims.assign(dims, dims + m->rank);
  t.present = true;
  // A CPU context's memory is the host's; a device's is read only through
  // staged copies (finishDeclarations).
  if (!ctx->device)
    t.host = data;
  return COMET_RT_SUCCESS;
}

int32_t Call::finishDeclarations(const std::vector<Tensor *> &ts) {
  for (const Tensor *t : ts)
    if (!t->present && !t->optional)
      return fail(t->name, ": null memref (a required operand)");
  auto declared = [&](const Tensor *x, const Tensor *y) {
    for (auto [out, in] : aliases)
      if ((out == x && in == y) || (out == y && in == x))
        return true;
    return false;
  };
  for (size_t i = 0; i < ts.size(); ++i)
    for (size_t j = i + 1; j < ts.size(); ++j) {
      const Tensor *x = ts[i], *y = ts[j];
      if ((x->role == Tensor::In && y->role == Tensor::In) || !x->present ||
          !y->present || x->bytes() == 0 || y->bytes() == 0)
        continue;
      auto *bx = static_cast<const char *>(x->data),
           *by = static_cast<const char *>(y->data);
      if (bx + x->bytes() <= by || by + y->bytes() <= bx)
        continue;
      if (bx == by && x->bytes() == y->bytes() && declared(x, y))
        continue;
      const Tensor *out = x->role == Tensor::In ? y : x;
      const Tensor *other = out == x ? y : x;
      if (bx == by && x->bytes() == y->bytes())
        return fail(out->name, " is ", other->name,
                    "'s buffer, which this entry does not allow");
      return fail(out->name, " overlaps ", other->name, " in memory");
    }
  if (!ctx->device)
    return COMET_RT_SUCCESS;
  for (Tensor *t : ts) {
    if (!(t->param || t->scan) || !t->present)
      continue;
    size_t bytes = static_cast<size_t>(t->bytes());
    staged.emplace_back(new unsigned char[bytes ? bytes : 1]);
    void *copy = staged.back().get();
    if (bytes) {
      if (int32_t rc = ctx->device->copy(ctx, copy, t->data, bytes))
        return rc;
    }
    t->host = copy;
    if (t->param)
      t->data = copy;
  }
  return COMET_RT_SUCCESS;
}

Call::Call(comet_rt_context *ctx, Entry entry, const Backend &backend)
    : ctx(ctx), entry(entry), op(entryName(entry)), backend(backend) {
  if (ctx && ctx->profile)
    profileStart = Profile::nowNs();
}

Call::~Call() {
  if (profileStart >= 0)
    ctx->profile->finish(ctx, static_cast<int32_t>(entry), op, profileStart);
}

int32_t Call::runnable(bool implemented) const {
  if (implemented)
    return COMET_RT_SUCCESS;
  const char *why = backend.excluded[static_cast<int32_t>(entry)];
  return rt::fail(COMET_RT_ERROR_UNSUPPORTED,
                  concat("comet_rt_", op, " is not implemented by the ",
                         backend.name, " backend", why ? ": " : "",
                         why ? why : ""));
}

} // namespace comet::rt
