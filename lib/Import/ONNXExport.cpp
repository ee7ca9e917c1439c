//===- ONNXExport.cpp - An inference model from a trained graph -----------===//
//
// Built with -fexceptions, like ONNXReader.cpp: protobuf and libonnx may
// throw; everything is caught at writeInferenceModel's boundary.
//
//===----------------------------------------------------------------------===//
#include "comet/Import/ONNXExport.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <climits>
#include <exception>
#include <map>
#include <set>

namespace comet::onnx_export {

namespace {

struct ExportError {
  std::string message;
};

std::string dimsStr(const std::vector<int64_t> &dims) {
  std::string r = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    r += (i ? "," : "") + std::to_string(dims[i]);
  return r + "]";
}

/// Every value a node of `g` or of its subgraphs reads: what a node that
/// holds `g` as an attribute may read from the outer scope (a superset).
void readsOf(const onnx::GraphProto &g, std::set<std::string> &out) {
  for (const onnx::NodeProto &n : g.node()) {
    for (const std::string &in : n.input())
      if (!in.empty())
        out.insert(in);
    for (const onnx::AttributeProto &a : n.attribute()) {
      if (a.has_g())
        readsOf(a.g(), out);
      for (const onnx::GraphProto &sub : a.graphs())
        readsOf(sub, out);
    }
  }
}

bool trainingModeOf(const onnx::NodeProto &n) {
  for (const onnx::AttributeProto &a : n.attribute())
    if (a.name() == "training_mode")
      return a.i() != 0;
  return false;
}

/// The forward part of a training graph as inference: Dropout without its
/// training_mode input (the identity), BatchNormalization and ORT's
/// BatchNormInternal as BatchNormalization on the running statistics.
void toInference(onnx::GraphProto &g) {
  for (onnx::NodeProto &n : *g.mutable_node()) {
    if (n.op_type() == "Dropout" && n.domain().empty()) {
      while (n.input_size() > 2)
        n.mutable_input()->RemoveLast();
    } else if ((n.op_type() == "BatchNormalization" && n.domain().empty()) ||
               (n.op_type() == "BatchNormInternal" &&
                n.domain() == "com.microsoft")) {
      n.set_op_type("BatchNormalization");
      n.clear_domain();
      auto *attrs = n.mutable_attribute();
      for (int i = attrs->size() - 1; i >= 0; --i)
        if (attrs->Get(i).name() == "training_mode")
          attrs->DeleteSubrange(i, 1);
      while (n.output_size() > 1)
        n.mutable_output()->RemoveLast();
    }
  }
}

/// The dims a graph input declares, where all are known.
bool knownDims(const onnx::ValueInfoProto &v, std::vector<int64_t> &dims) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
    return false;
  for (const auto &d : v.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value())
      return false;
    dims.push_back(d.dim_value());
  }
  return true;
}

void cut(onnx::ModelProto &m, const std::vector<std::string> &outputs,
         const std::vector<checkpoint::Parameter> &parameters,
         bool trainingGraph) {
  onnx::GraphProto &g = *m.mutable_graph();
  if (trainingGraph)
    toInference(g);
  if (outputs.empty())
    throw ExportError{"no output was requested"};
  std::map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const std::string &out : g.node(i).output())
      if (!out.empty())
        producer[out] = i;
  std::map<std::string, const onnx::ValueInfoProto *> inputs;
  for (const onnx::ValueInfoProto &v : g.input())
    inputs[v.name()] = &v;
  std::set<std::string> initializers;
  for (const onnx::TensorProto &t : g.initializer())
    initializers.insert(t.name());
  std::map<std::string, const checkpoint::Parameter *> params;
  for (const checkpoint::Parameter &p : parameters)
    params[p.name] = &p;

  std::set<std::string> requested;
  for (const std::string &name : outputs) {
    if (!requested.insert(name).second)
      throw ExportError{"output '" + name + "' is requested twice"};
    if (!producer.count(name) && !inputs.count(name) &&
        !initializers.count(name))
      throw ExportError{"the graph has no value named '" + name +
                        "' to output"};
  }

  // What the outputs need, back to the graph's inputs and initializers.
  std::vector<bool> keep(g.node_size(), false);
  std::set<std::string> needed;
  std::vector<std::string> work(outputs.rbegin(), outputs.rend());
  while (!work.empty()) {
    std::string name = work.back();
    work.pop_back();
    if (!needed.insert(name).second)
      continue;
    auto it = producer.find(name);
    if (it == producer.end() || keep[it->second])
      continue;
    keep[it->second] = true;
    const onnx::NodeProto &n = g.node(it->second);
    std::set<std::string> reads;
    for (const std::string &in : n.input())
      if (!in.empty())
        reads.insert(in);
    for (const onnx::AttributeProto &a : n.attribute()) {
      if (a.has_g())
        readsOf(a.g(), reads);
      for (const onnx::GraphProto &sub : a.graphs())
        readsOf(sub, reads);
    }
    for (const std::string &r : reads)
      if (producer.count(r) || inputs.count(r) || initializers.count(r))
        work.push_back(r);
  }

  onnx::GraphProto out;
  out.set_name(g.name());
  out.set_doc_string(g.doc_string());
  std::set<std::string> produced;
  for (int i = 0; i < g.node_size(); ++i)
    if (keep[i]) {
      onnx::NodeProto *n = out.add_node();
      *n = g.node(i);
      // An inference BatchNormalization has one output (ORT refuses the
      // running statistics' outputs an eval graph may still declare).
      if (n->op_type() == "BatchNormalization" && n->domain().empty() &&
          !trainingModeOf(*n) &&
          std::none_of(n->output().begin() + 1, n->output().end(),
                       [&](const std::string &o) { return needed.count(o); }))
        while (n->output_size() > 1)
          n->mutable_output()->RemoveLast();
      for (const std::string &o : n->output())
        produced.insert(o);
    }
  // Parameters first, in the order of the graph's inputs, then its own
  // initializers.
  auto addParameter = [&](const std::string &name,
                          const onnx::ValueInfoProto *declared) {
    const checkpoint::Parameter &p = *params.at(name);
    std::vector<int64_t> dims;
    if (declared && knownDims(*declared, dims) && dims != p.dims)
      throw ExportError{"parameter '" + name + "' has shape " +
                        dimsStr(p.dims) + " but the graph declares " +
                        dimsStr(dims)};
    if (declared && declared->type().has_tensor_type() &&
        declared->type().tensor_type().elem_type() != onnx::TensorProto::FLOAT)
      throw ExportError{"parameter '" + name +
                        "' is float32 but the graph declares another type"};
    onnx::TensorProto *t = out.add_initializer();
    t->set_name(name);
    for (int64_t d : p.dims)
      t->add_dims(d);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->set_raw_data(p.values.data(), p.values.size() * sizeof(float));
  };
  std::set<std::string> done;
  for (const onnx::ValueInfoProto &v : g.input())
    if (needed.count(v.name()) && params.count(v.name()) &&
        done.insert(v.name()).second)
      addParameter(v.name(), &v);
  for (const onnx::TensorProto &t : g.initializer()) {
    if (!needed.count(t.name()) || done.count(t.name()))
      continue;
    done.insert(t.name());
    if (params.count(t.name()))
      addParameter(t.name(), nullptr);
    else
      *out.add_initializer() = t;
  }
  for (const onnx::ValueInfoProto &v : g.input())
    if (needed.count(v.name()) && !done.count(v.name()))
      *out.add_input() = v;

  // Outputs typed as the graph types them, else by shape inference.
  std::map<std::string, const onnx::ValueInfoProto *> typed;
  for (const auto *list : {&g.value_info(), &g.input(), &g.output()})
    for (const onnx::ValueInfoProto &v : *list)
      if (v.has_type())
        typed[v.name()] = &v;
  for (const std::string &name : outputs) {
    onnx::ValueInfoProto *v = out.add_output();
    v->set_name(name);
    if (auto it = typed.find(name); it != typed.end())
      *v->mutable_type() = it->second->type();
  }
  std::set<std::string> inGraph(requested);
  for (const onnx::ValueInfoProto &v : out.input())
    inGraph.insert(v.name());
  for (const onnx::TensorProto &t : out.initializer())
    inGraph.insert(t.name());
  for (const onnx::ValueInfoProto &v : g.value_info())
    if (produced.count(v.name()) && !inGraph.count(v.name()))
      *out.add_value_info() = v;
  *m.mutable_graph() = std::move(out);

  bool untyped = false;
  for (const onnx::ValueInfoProto &v : m.graph().output())
    untyped |= !v.has_type();
  if (!untyped)
    return;
  onnx::ModelProto inferred = m;
  try {
    onnx::shape_inference::InferShapes(inferred);
  } catch (const std::exception &) {
    return; // what it inferred before failing is of no use; ORT infers
  }
  typed.clear();
  for (const auto *list :
       {&inferred.graph().value_info(), &inferred.graph().output()})
    for (const onnx::ValueInfoProto &v : *list)
      if (v.has_type())
        typed[v.name()] = &v;
  for (onnx::ValueInfoProto &v : *m.mutable_graph()->mutable_output())
    if (auto it = typed.find(v.name()); !v.has_type() && it != typed.end())
      *v.mutable_type() = it->second->type();
}

} // namespace

bool writeInferenceModel(const void *model, size_t size,
                         const std::vector<std::string> &outputs,
                         const std::vector<checkpoint::Parameter> &parameters,
                         bool trainingGraph, std::string &bytes,
                         std::string &error) {
  try {
    onnx::ModelProto m;
    if (size > INT_MAX || !m.ParseFromArray(model, static_cast<int>(size))) {
      error = "not a valid ONNX ModelProto (truncated or corrupt protobuf)";
      return false;
    }
    cut(m, outputs, parameters, trainingGraph);
    if (m.ByteSizeLong() > INT_MAX) {
      error = "the inference model needs " + std::to_string(m.ByteSizeLong()) +
              " bytes, more than one protobuf holds (2 GiB); COMET does not "
              "write external data";
      return false;
    }
    if (!m.SerializeToString(&bytes)) {
      error = "cannot serialize the inference model";
      return false;
    }
    return true;
  } catch (const ExportError &e) {
    error = e.message;
  } catch (const std::exception &e) {
    error = std::string("cannot write the inference model: ") + e.what();
  } catch (...) {
    error = "cannot write the inference model";
  }
  return false;
}

} // namespace comet::onnx_export
