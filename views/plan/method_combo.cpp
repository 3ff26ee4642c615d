#include "views/plan/method_combo.h"

#include "views/plan/plan_data.h"

#include <QSignalBlocker>

namespace routepack::views {

void addMethodItem(QComboBox* box, Method m) {
    box->addItem(QString::fromLatin1(method_label(m)), method_index(m));
}

QComboBox* methodCombo(QWidget* parent) {
    auto* box = new QComboBox(parent);
    // As wide as its longest method name, also after the communication methods join the list (a
    // width fixed at the first show cut "RoutePack+comm").
    box->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    for (int k = 0; k < kPaperMethodCount; ++k)
        addMethodItem(box, method_at(k));
    setComboMethod(box, Method::RoutePack);
    box->setToolTip(QObject::tr("Method whose layout is shown"));
    return box;
}

void fillMethodCombo(QComboBox* box, const PlanResult* plan) {
    const QSignalBlocker block(box);
    const Method current = comboMethod(box);
    std::vector<Method> methods;
    if (plan)
        methods = layout_methods(*plan);
    else
        for (int k = 0; k < kPaperMethodCount; ++k)
            methods.push_back(method_at(k));
    bool same = box->count() == static_cast<int>(methods.size());
    for (int i = 0; same && i < box->count(); ++i)
        same = box->itemData(i).toInt() == method_index(methods[static_cast<std::size_t>(i)]);
    if (same) return; // same list: keep it as it is
    box->clear();
    for (const Method m : methods)
        addMethodItem(box, m);
    const int at = box->findData(method_index(current));
    box->setCurrentIndex(at >= 0 ? at : box->findData(method_index(Method::RoutePack)));
}

Method comboMethod(const QComboBox* box) {
    return box->currentData().isValid() ? method_at(box->currentData().toInt()) : Method::RoutePack;
}

void setComboMethod(QComboBox* box, Method m) {
    const int at = box->findData(method_index(m));
    if (at >= 0) box->setCurrentIndex(at);
}

} // namespace routepack::views
